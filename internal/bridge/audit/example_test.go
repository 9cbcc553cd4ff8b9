package audit_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// One call per write, after its outcome is known; the answer's typed text
// never reaches the log.
func Example() {
	dir, _ := os.MkdirTemp("", "audit-example-")
	defer os.RemoveAll(dir)
	clock := func() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }
	log, _, err := audit.Open(audit.Options{Dir: dir, Content: audit.ContentFull, NoSync: true, Now: clock})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer log.Close()

	who := audit.Who{Session: "desk", Device: "dev-7f3a"}
	req := wire.AnswerRequest{Header: wire.Header{RequestID: "r-1"}, Conversation: "c-1", Question: "q-1", Revision: 2, Text: "hunter2"}
	rc, _ := log.Record(who, audit.AnswerOf(req, audit.OK))
	log.Record(who, audit.SendOf(wire.SendRequest{Header: wire.Header{RequestID: "r-2"}, Conversation: "c-1", Text: "go on"}, audit.Refused("busy")))
	log.Record(who, audit.RenameOf(wire.RenameRequest{Header: wire.Header{RequestID: "r-3"}, Tab: "t-1", Title: "Logs"}, audit.OK))

	data, _ := os.ReadFile(filepath.Join(dir, audit.LogName))
	fmt.Printf("%s", data)
	got, _ := log.Receipt("dev-7f3a", "r-1")
	fmt.Println(got.Event, got.RequestID, got.Result, got.ID == rc.ID)
	// Output:
	// {"time":"2026-12-01T10:00:00.000Z","session":"desk","device":"dev-7f3a","event":"answer","requestId":"r-1","question":"q-1","revision":2,"answer":"text","result":"ok","prev":"c0f93825260980551afc0f185362677535f804e5d21e6627e8930de244db6823"}
	// {"time":"2026-12-01T10:00:00.000Z","session":"desk","device":"dev-7f3a","event":"send","requestId":"r-2","turn":"c-1","steer":false,"preview":"go on","result":"refused","reason":"busy","prev":"aa1f3fa38de4e6e144286575c0b30e74fbf333ac9d2bf20d6f186cc7e5398a84"}
	// {"time":"2026-12-01T10:00:00.000Z","session":"desk","device":"dev-7f3a","event":"tab.rename","tab":"t-1","name":"Logs","prev":"2333f67a99189d5b3a6be39f0a15a365be944469b918c60a35ba114b4a34d525"}
	// answer r-1 ok true
}
