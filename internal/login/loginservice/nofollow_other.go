//go:build !unix

package loginservice

const oNoFollow = 0
