package hook

import (
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestCleanReplyX5: ids the agent sends that break X5 are dropped.
func TestCleanReplyX5(t *testing.T) {
	r := cleanReply(wireReply())
	if r.Question != "" || len(r.OptionIDs) != 1 || r.OptionIDs[0] != "yes" || len(r.Values) != 1 {
		t.Fatalf("cleanReply kept bad ids: %+v", r)
	}
}

func wireReply() (r wire.AskReply) {
	r.Question = "q/1"
	r.OptionIDs = []string{"yes", "no pe"}
	r.Values = map[string]string{"ok": "v", "b\u202ead": "w"}
	return r
}
