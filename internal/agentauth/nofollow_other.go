//go:build !unix

package agentauth

const oNoFollow = 0
