package durable

import "time"

// SetTimeouts sets the read and write timeouts of the http.Server each
// listener gets, for tests that outlast them.
func SetTimeouts(s *Server, read, write time.Duration) {
	s.readTimeout, s.writeTimeout = read, write
}
