package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/go-json-experiment/json/jsontext"
)

// BenchmarkRecord measures one append (a send line and its receipt):
// without fsync, with fsync one at a time, and with fsync from many
// goroutines at once, which share fsync rounds. It reports appends/s.
func BenchmarkRecord(b *testing.B) {
	ev := SendOf(wire.SendRequest{Header: wire.Header{RequestID: "r-0123456789"}, Conversation: "c-1", Text: strings.Repeat("word ", 60)}, OK)
	for _, bc := range []struct {
		name     string
		noSync   bool
		parallel bool
	}{{"nosync", true, false}, {"fsync", false, false}, {"fsync_parallel", false, true}} {
		b.Run(bc.name, func(b *testing.B) {
			l, _, err := Open(Options{Dir: filepath.Join(b.TempDir(), "state"), NoSync: bc.noSync})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.ReportAllocs()
			b.ResetTimer()
			if bc.parallel {
				b.SetParallelism(16)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := l.Record(who, ev); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for b.Loop() {
					if _, err := l.Record(who, ev); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// BenchmarkVerify measures verify over 10,000 lines written by Record,
// and over a full audit.log (DefaultMaxBytes, 16 MiB, of send lines with
// a whole preview and answers), and reports ns a line.
func BenchmarkVerify(b *testing.B) {
	b.Run("10k_lines", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), "state")
		l, _, err := Open(Options{Dir: dir, NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		for i := range 10000 {
			l.Record(who, answer(fmt.Sprintf("r-%d", i)))
		}
		l.Close()
		files, _ := snapshot(dir)
		benchVerify(b, files)
	})
	b.Run("16MiB", func(b *testing.B) {
		var data []byte
		prev, tm := GenesisPrev, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		for i := 0; len(data) < DefaultMaxBytes-1024; i++ {
			var ev Event = answer(fmt.Sprintf("r-%d", i))
			if i%2 == 0 {
				ev = SendOf(wire.SendRequest{Header: wire.Header{RequestID: fmt.Sprintf("r-%d", i)}, Conversation: "c-1", Text: strings.Repeat("word ", 30)}, OK)
			}
			line := encodeLine(nil, tm.Add(time.Duration(i)*time.Millisecond), who, ev, false, prev)
			data, prev = append(append(data, line...), '\n'), hashLine(line)
		}
		benchVerify(b, []fileData{{"audit.log", data}})
	})
}

func benchVerify(b *testing.B, files []fileData) {
	var rep Report
	for b.Loop() {
		if rep = verify(files); !rep.Intact() {
			b.Fatal(rep.Problems)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rep.Records), "ns/line")
}

// BenchmarkParseLineSideBySide reads the lines of testdata/audit.log with
// the reader verify uses (decode with jsontext, encode again, compare)
// and with encoding/json into a map, which checks none of the line's
// form, in one run, and reports each one's ns a line and their ratio.
// (Before, a hand-written scanner read them; measured the
// same way, the reader here took 1.0 to 1.3 times its time.)
func BenchmarkParseLineSideBySide(b *testing.B) {
	data, err := os.ReadFile("testdata/audit.log")
	if err != nil {
		b.Fatal(err)
	}
	lines := splitLines(data)
	var (
		strict, std time.Duration
		lr          lineReader
	)
	for b.Loop() {
		t0 := time.Now()
		for _, l := range lines {
			if _, err := lr.parse(l); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				b.Fatal(err)
			}
		}
		strict, std = strict+t1.Sub(t0), std+time.Since(t1)
	}
	n := float64(b.N * len(lines))
	b.ReportMetric(float64(strict.Nanoseconds())/n, "ParseLine-ns/line")
	b.ReportMetric(float64(std.Nanoseconds())/n, "encoding/json-ns/line")
	b.ReportMetric(float64(strict)/float64(std), "ParseLine/encoding/json")
}

// BenchmarkEncodeSideBySide writes one send line with the package's
// encoder, with encoding/json (a struct in the line's field order, HTML
// escaping off) and with jsontext's token encoder, in one run, and
// reports each one's ns a line and the ratios. Only the first writes the
// line's format: the others leave direction and invisible characters,
// C1 controls and DEL raw.
func BenchmarkEncodeSideBySide(b *testing.B) {
	req := wire.SendRequest{Header: wire.Header{RequestID: "r-0123456789"}, Conversation: "c-1", Text: strings.Repeat("word ", 60)}
	ev := SendOf(req, OK)
	tm := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	type sendLine struct {
		Time      string `json:"time"`
		Session   string `json:"session"`
		Device    string `json:"device"`
		Event     string `json:"event"`
		RequestID string `json:"requestId"`
		Turn      string `json:"turn"`
		Steer     bool   `json:"steer"`
		Preview   string `json:"preview"`
		Result    string `json:"result"`
		Prev      string `json:"prev"`
	}
	var (
		buf              []byte
		jbuf             bytes.Buffer
		hand, std, token time.Duration
	)
	jenc := json.NewEncoder(&jbuf)
	jenc.SetEscapeHTML(false)
	tenc := jsontext.NewEncoder(&jbuf)
	for b.Loop() {
		t0 := time.Now()
		buf = encodeLine(buf[:0], tm, who, ev, false, GenesisPrev)
		t1 := time.Now()
		jbuf.Reset()
		if err := jenc.Encode(sendLine{tm.UTC().Format(timeLayout), who.Session, who.Device, EventSend, cut(req.RequestID, idBytes),
			cut(req.Conversation, idBytes), req.Steer, cut(preview(req.Text), previewBytes), StatusOK, GenesisPrev}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		jbuf.Reset()
		tenc.Reset(&jbuf)
		for _, tok := range []jsontext.Token{jsontext.BeginObject,
			jsontext.String("time"), jsontext.String(tm.UTC().Format(timeLayout)),
			jsontext.String("session"), jsontext.String(who.Session), jsontext.String("device"), jsontext.String(who.Device),
			jsontext.String("event"), jsontext.String(EventSend), jsontext.String("requestId"), jsontext.String(cut(req.RequestID, idBytes)),
			jsontext.String("turn"), jsontext.String(cut(req.Conversation, idBytes)), jsontext.String("steer"), jsontext.Bool(req.Steer),
			jsontext.String("preview"), jsontext.String(cut(preview(req.Text), previewBytes)),
			jsontext.String("result"), jsontext.String(StatusOK), jsontext.String("prev"), jsontext.String(GenesisPrev),
			jsontext.EndObject} {
			if err := tenc.WriteToken(tok); err != nil {
				b.Fatal(err)
			}
		}
		t3 := time.Now()
		hand, std, token = hand+t1.Sub(t0), std+t2.Sub(t1), token+t3.Sub(t2)
	}
	if !bytes.Equal(append(buf, '\n'), jbuf.Bytes()) {
		b.Fatalf("the encoders differ:\n%s\n%s", buf, jbuf.Bytes())
	}
	n := float64(b.N)
	b.ReportMetric(float64(hand.Nanoseconds())/n, "hand-ns/line")
	b.ReportMetric(float64(std.Nanoseconds())/n, "encoding/json-ns/line")
	b.ReportMetric(float64(token.Nanoseconds())/n, "jsontext-ns/line")
	b.ReportMetric(float64(std)/float64(hand), "encoding/json/hand")
	b.ReportMetric(float64(token)/float64(hand), "jsontext/hand")
}

// BenchmarkEventFieldsSideBySide writes the fields of a send and of an
// answer event from their schema (encoder.event, what the log does) and,
// as the baseline, by calling the encoder field by field as a hand-written
// method per event would, alternately in one run, and reports each one's
// ns for the two and the ratio table/direct: the cost of the one table.
func BenchmarkEventFieldsSideBySide(b *testing.B) {
	send := SendOf(wire.SendRequest{Header: wire.Header{RequestID: "r-0123456789"}, Conversation: "c-1", Text: strings.Repeat("word ", 60)}, OK)
	answer := AnswerOf(wire.AnswerRequest{Header: wire.Header{RequestID: "r-1"}, Question: "q-1", Revision: 3, OptionIDs: []string{wire.Yes}}, OK)
	evs := []Event{send, answer} // as the log gets them
	direct := func(e *encoder) {
		e.id("requestId", send.RequestID)
		e.id("turn", send.On.id)
		e.bool("steer", send.Steer)
		e.text("preview", preview(send.Text), previewBytes)
		e.id("requestId", answer.RequestID)
		e.id("question", answer.Question)
		e.int("revision", answer.Revision)
		e.texts("optionIds", answer.Answered.optionIDs)
	}
	var (
		t1, t2      encoder
		table, hand time.Duration
	)
	for b.Loop() {
		s := time.Now()
		t1.b = append(t1.b[:0], '{')
		t1.event(evs[0])
		t1.event(evs[1])
		m := time.Now()
		t2.b = append(t2.b[:0], '{')
		direct(&t2)
		table, hand = table+m.Sub(s), hand+time.Since(m)
	}
	if !bytes.Equal(t1.b, t2.b) {
		b.Fatalf("the encodings differ:\n%s\n%s", t1.b, t2.b)
	}
	n := float64(b.N)
	b.ReportMetric(float64(table.Nanoseconds())/n, "table-ns/2events")
	b.ReportMetric(float64(hand.Nanoseconds())/n, "direct-ns/2events")
	b.ReportMetric(float64(table)/float64(hand), "table/direct")
}
