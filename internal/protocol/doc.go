// Package protocol is the group of packages both sides of Collie speak: the
// bridge and every durable agent link them, so they import nothing else of
// the module but each other (and protocol/wire only the cleaner and the
// strict decoder).
//
//   - wire: protocol v1's types, capped closed-schema decoding, the write
//     registry, the cleaning of a snapshot
//   - sanitize: the cleaning of agent text (control and invisible
//     characters, limits, ids and links)
//   - jsonstrict, tomlstrict: exact JSON and TOML decoding (exact case,
//     no name twice, nothing after the value)
//   - bearer: the one parser of an Authorization header
package protocol
