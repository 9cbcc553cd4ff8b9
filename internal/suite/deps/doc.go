// Package deps has no code. Its test states the rules of the module's
// layering and checks them against what `go list -deps` reports and, for
// D6, against the calls in the bridge's own source: a change that breaks
// a rule fails the test, with the rule's reason.
package deps
