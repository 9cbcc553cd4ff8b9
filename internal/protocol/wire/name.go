package wire

// The rule for a durable agent's name, on both sides: the agent's
// instance name becomes a file name and a systemd unit's instance; the
// bridge's name for a durable agent in sources.json becomes a socket's
// file name, and a hosted agent's board is shown under one.

// MaxNameBytes is the longest name of a durable agent, in bytes.
const MaxNameBytes = 64

// NameRule is the rule for a durable agent's name in words, for an error
// that says how to fix a name.
const NameRule = "use 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit"

// NameByte reports whether c may stand in a durable agent's name: a-z and
// 0-9 anywhere, '.', '_' and '-' after the first byte.
func NameByte(c byte, first bool) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || !first && (c == '.' || c == '_' || c == '-')
}

// ValidName reports whether name follows NameRule: 1 to MaxNameBytes
// bytes, each a NameByte.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameBytes {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !NameByte(name[i], i == 0) {
			return false
		}
	}
	return true
}
