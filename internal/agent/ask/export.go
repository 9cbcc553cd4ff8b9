package ask

import "net/http"

// FindSocket picks the agent's socket as collie ask does: socket (--socket),
// then agent (--agent NAME), then $COLLIE_AGENT_SOCKET and $COLLIE_AGENT,
// then the only socket in $XDG_RUNTIME_DIR/desk. Other local programs of
// the agent (collie mcp) find it the same way.
func FindSocket(socket, agent string, getenv func(string) string) (string, error) {
	return findSocket(socket, agent, getenv)
}

// SocketClient is an HTTP client of the agent listening at path, as
// collie ask's: it walks the path before every connection and talks only
// to a listener of the user's own. Requests go to "http://agent" + a
// route of collie-durable(7).
func SocketClient(path string) *http.Client { return newClient(path).hc }
