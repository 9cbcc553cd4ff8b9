package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// Receipt is what a device can fetch later to prove what it did (A6): one
// of the five taps, without any typed text. ID is the hex SHA-256 of the
// tap's line in audit.log, which is also the next line's "prev", so a
// receipt points at exactly one line of the log.
type Receipt struct {
	ID        string    `json:"id"`
	Time      time.Time `json:"time"`
	Device    string    `json:"device"`
	Session   string    `json:"session"`
	Event     string    `json:"event"`
	RequestID string    `json:"requestId"`
	Result    string    `json:"result"` // "ok", "refused", "failed", or "unknown" (StatusUnknown)
}

// ErrNoReceipt is returned by Receipt when no receipt is kept for the
// request: there was none, or the retention removed it.
var ErrNoReceipt = errors.New("no receipt is kept for that request")

func encodeReceipt(b []byte, r Receipt) []byte {
	e := encoder{b: append(b, '{')}
	e.key("id")
	e.b = appendString(e.b, r.ID)
	e.key("time")
	e.b = append(e.b, '"')
	e.b = r.Time.UTC().AppendFormat(e.b, timeLayout)
	e.b = append(e.b, '"')
	for _, f := range [...][2]string{{"device", r.Device}, {"session", r.Session}, {"event", r.Event}, {"requestId", r.RequestID}, {"result", r.Result}} {
		e.key(f[0])
		e.b = appendString(e.b, f[1])
	}
	return append(e.b, '}', '\n')
}

// parseReceipt reads a line of receipts.jsonl only as encodeReceipt
// writes it: decoded with jsonstrict (exactly its keys, in their case,
// each once, each a string), then encoded again and compared byte for
// byte, so its order, its escapes and no whitespace are as written.
func parseReceipt(line []byte) (Receipt, error) {
	var v struct {
		ID        string `json:"id"`
		Time      string `json:"time"`
		Device    string `json:"device"`
		Session   string `json:"session"`
		Event     string `json:"event"`
		RequestID string `json:"requestId"`
		Result    string `json:"result"`
	}
	if err := jsonstrict.Unmarshal(line, &v); err != nil {
		return Receipt{}, err
	}
	t, err := time.Parse(timeLayout, v.Time)
	if err != nil || t.Format(timeLayout) != v.Time {
		return Receipt{}, fmt.Errorf("the time %s is not RFC 3339 in UTC to the millisecond", jsonstrict.Quote(v.Time))
	}
	if !isHash(v.ID) {
		return Receipt{}, errors.New("the id is not a hex SHA-256")
	}
	r := Receipt{ID: v.ID, Time: t, Device: v.Device, Session: v.Session, Event: v.Event, RequestID: v.RequestID, Result: v.Result}
	want := encodeReceipt(make([]byte, 0, len(line)+1), r)
	if at := firstDiff(line, want[:len(want)-1]); at >= 0 {
		return Receipt{}, fmt.Errorf("it is not written the way Collie writes a receipt: %s at byte %d", noncanonical(line, at), at+1)
	}
	return r, nil
}

// receipts is receipts.jsonl: one receipt a line, oldest first, appended
// as taps happen and rewritten whole when the retention removes some.
// Its methods run under the Log's mu and flock.
type receipts struct {
	path      string
	f         *os.File
	fi        os.FileInfo   // f's, when opened: its inode
	fmu       *sync.RWMutex // the Log's: held to swap f
	size      int64         // f's size after our last write
	needNL    bool
	list      []Receipt // kept, oldest first
	lines     int       // lines in the file, list and those the retention removed
	ret       Retention
	lastPrune time.Time
}

func openReceipts(path string, ret Retention, fmu *sync.RWMutex, op *Opened) (*receipts, error) {
	f, err := openPrivate(path, os.O_RDWR|os.O_APPEND, op)
	if err != nil {
		return nil, err
	}
	rc := &receipts{path: path, f: f, fmu: fmu, ret: ret}
	bad, err := rc.load()
	op.BadReceipts = bad
	if err != nil {
		f.Close()
		rc.f = nil
	}
	return rc, err
}

// load reads the whole file; it counts and drops lines it cannot read.
func (rc *receipts) load() (bad int, err error) {
	fi, err := rc.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", rc.path, err)
	}
	data := make([]byte, fi.Size())
	if _, err := rc.f.ReadAt(data, 0); err != nil {
		return 0, fmt.Errorf("read %s: %w", rc.path, err)
	}
	rc.fi, rc.size = fi, fi.Size()
	rc.needNL = len(data) > 0 && data[len(data)-1] != '\n'
	rc.list, rc.lines = nil, 0
	for _, line := range splitLines(data) {
		rc.lines++
		r, err := parseReceipt(line)
		if err != nil {
			bad++
			continue
		}
		rc.list = append(rc.list, r)
	}
	return bad, nil
}

// catchUp reloads the file when another process changed it: one lstat,
// as for the log.
func (rc *receipts) catchUp() error {
	pi, err := os.Lstat(rc.path)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("audit: stat %s: %w", rc.path, err)
	case err != nil || !os.SameFile(rc.fi, pi):
		var op Opened
		f, err := openPrivate(rc.path, os.O_RDWR|os.O_APPEND, &op)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		rc.swap(f)
	case pi.Size() == rc.size:
		return nil
	}
	_, err = rc.load()
	return err
}

func (rc *receipts) swap(f *os.File) {
	rc.fmu.Lock()
	rc.f.Close()
	rc.f = f
	rc.fmu.Unlock()
}

// add appends r, then applies the retention in memory and, when due, to
// the file.
func (rc *receipts) add(r Receipt, now time.Time) error {
	b := make([]byte, 0, 256)
	if rc.needNL {
		b = append(b, '\n')
	}
	b = encodeReceipt(b, r)
	n, err := rc.f.Write(b)
	if err != nil {
		// Cut a partial line back off, as the log does; when that fails
		// too, the next load drops it (BadReceipts) and Open recovers the
		// receipt from the log.
		if n > 0 && rc.f.Truncate(rc.size) != nil {
			rc.size += int64(n)
			rc.needNL = b[n-1] != '\n'
		}
		return fmt.Errorf("write %s: %w", rc.path, err)
	}
	rc.size += int64(n)
	rc.needNL = false
	rc.list = append(rc.list, r)
	rc.lines++
	return rc.maybePrune(now)
}

// expire drops, in memory, receipts past the retention: older than
// MaxAge, or beyond the newest MaxCount.
func (rc *receipts) expire(now time.Time) {
	cutoff := now.Add(-rc.ret.MaxAge)
	drop := 0
	for drop < len(rc.list) && rc.list[drop].Time.Before(cutoff) {
		drop++
	}
	drop = max(drop, len(rc.list)-rc.ret.MaxCount)
	// Reslicing costs nothing; the next append that outgrows the array
	// copies only the receipts kept.
	rc.list = rc.list[drop:]
}

// maybePrune prunes the file once a day, or sooner when it holds half
// as many lines again as the receipts kept: rewriting it more often
// would cost more than appending (see BenchmarkRecord).
func (rc *receipts) maybePrune(now time.Time) error {
	rc.expire(now)
	if now.Sub(rc.lastPrune) < 24*time.Hour && rc.lines-len(rc.list) <= rc.ret.MaxCount/2 {
		return nil
	}
	_, err := rc.prune(now)
	return err
}

// prune applies the retention and, when the file holds receipts it no
// longer keeps (or unreadable lines), rewrites it with only the kept
// ones: a new file in the same folder, synced, renamed over the old one.
// It returns how many lines it removed.
func (rc *receipts) prune(now time.Time) (int, error) {
	rc.expire(now)
	rc.lastPrune = now
	removed := rc.lines - len(rc.list)
	if removed == 0 && !rc.needNL {
		return 0, nil
	}
	var b []byte
	for _, r := range rc.list {
		b = encodeReceipt(b, r)
	}
	tmp, err := os.CreateTemp(filepath.Dir(rc.path), ".receipts-*")
	if err != nil {
		return 0, fmt.Errorf("prune receipts: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), rc.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, fmt.Errorf("prune receipts: %w", err)
	}
	syncDir(filepath.Dir(rc.path))
	var op Opened
	f, err := openPrivate(rc.path, os.O_RDWR|os.O_APPEND, &op)
	if err != nil {
		return 0, fmt.Errorf("prune receipts: %w", err)
	}
	rc.swap(f)
	if rc.fi, err = f.Stat(); err != nil {
		return removed, fmt.Errorf("prune receipts: %w", err)
	}
	rc.size, rc.lines, rc.needNL = int64(len(b)), len(rc.list), false
	return removed, nil
}

// Receipt is the newest receipt of device's request requestID (A6).
// Lookups are per device: another device's request ids never shadow
// this one's. It returns ErrNoReceipt when none is kept.
func (l *Log) Receipt(device, requestID string) (Receipt, error) {
	var out Receipt
	err := l.readReceipts(func(list []Receipt) {
		for i := len(list) - 1; i >= 0; i-- {
			if r := list[i]; r.Device == device && r.RequestID == requestID {
				out = r
				return
			}
		}
	})
	if err == nil && out.ID == "" {
		err = ErrNoReceipt
	}
	return out, err
}

// Receipts lists device's receipts from since on, oldest first; every
// device's when device is "".
func (l *Log) Receipts(device string, since time.Time) ([]Receipt, error) {
	var out []Receipt
	err := l.readReceipts(func(list []Receipt) {
		for _, r := range list {
			if (device == "" || r.Device == device) && !r.Time.Before(since) {
				out = append(out, r)
			}
		}
	})
	return out, err
}

// Prune applies the receipts' retention now and returns how many it
// removed. Open and a daily timer do this already.
func (l *Log) Prune() (int, error) {
	var n int
	err := l.locked(func() error {
		var err error
		n, err = l.rc.prune(l.opts.Now())
		return err
	})
	return n, err
}

func (l *Log) readReceipts(fn func([]Receipt)) error {
	return l.locked(func() error {
		l.rc.expire(l.opts.Now())
		fn(l.rc.list)
		return nil
	})
}

// locked runs fn under mu and the flock, after catching up with what
// another process wrote to the receipts.
func (l *Log) locked(fn func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	unlock, err := flock(l.lockF, true)
	if err != nil {
		return fmt.Errorf("audit: lock the log: %w", err)
	}
	defer unlock()
	if err := l.rc.catchUp(); err != nil {
		return err
	}
	return fn()
}

// StatusUnknown is the result of a receipt for a write whose outcome the
// log does not hold: it was forwarded to the agent (its pending line is
// in the log) and the bridge stopped before the agent answered. The agent
// may or may not have carried it out.
const StatusUnknown = "unknown"

// recoverReceipts files the receipts of taps whose line reached the log
// but whose receipt did not: a crash between the two writes, or a
// receipt file lost. The log is what is synced to the disk; the receipts
// are an index of it. It reads the log's newest two files: every tap
// after the line of the newest receipt gets its receipt (it hashes lines
// back to that one, parsing only those after it), so it finds every line
// written since unless the log rotated twice since (16 MiB of lines). A
// write begun (a pending line) whose outcome is in neither file was cut by
// the bridge stopping: its receipt says "unknown", never "pending". It
// runs at Open, before this process begins a write, so no write of its own
// is in flight; should another process's write end after all, its outcome's
// receipt is the newer one for the request. A line whose receipt is kept
// already is never filed twice. It returns how many it filed.
func (l *Log) recoverReceipts(now time.Time) (int, error) {
	paths, err := Files(l.opts.Dir)
	if err != nil {
		return 0, err
	}
	files, err := readFiles(paths[max(0, len(paths)-2):])
	if err != nil {
		return 0, err
	}
	var all [][]byte // the lines of the files, oldest first
	for _, f := range files {
		all = append(all, splitLines(f.data)...)
	}
	kept := make(map[string]bool, len(l.rc.list))
	last := ""
	for _, r := range l.rc.list {
		kept[r.ID] = true
		last = r.ID
	}
	from := 0 // the first line after the newest receipt's
	if last != "" {
		from = len(all) // its line is older than these files: none is missing from them
		for j := len(all) - 1; j >= 0; j-- {
			if hashLine(all[j]) == last {
				from = j + 1
				break
			}
		}
	}
	ended := map[string]bool{} // pending lines an outcome names
	for _, line := range all {
		if h, ok := intentOf(line); ok {
			ended[h] = true
		}
	}
	cutoff := now.Add(-l.opts.Retention.MaxAge)
	added := 0
	var lr lineReader
	for j, line := range all {
		// Before the newest receipt's line only a pending line can lack
		// its receipt; the test on bytes is cheap, the parse is not. No
		// string value can hold the bytes: its quotes are escaped.
		pending := bytes.Contains(line, pendingField)
		if j < from && !pending {
			continue
		}
		r, err := lr.parse(line)
		if err != nil {
			continue
		}
		sc, ok := schemas[r.Event]
		if !ok || !sc.tap || r.Time.Before(cutoff) || kept[r.Hash] {
			continue
		}
		result := r.Result()
		if result == StatusPending {
			if ended[r.Hash] {
				continue // its outcome's line has the receipt
			}
			result = StatusUnknown
		}
		id, _ := r.Get("requestId").(string)
		rc := Receipt{ID: r.Hash, Time: r.Time, Device: r.Device, Session: r.Session, Event: r.Event, RequestID: id, Result: result}
		if err := l.rc.add(rc, now); err != nil {
			return added, err
		}
		kept[r.Hash] = true
		added++
	}
	return added, nil
}

// pendingField is how a pending line holds its result.
var pendingField = []byte(`"result":"` + StatusPending + `"`)

// intentOf returns the pending line an outcome's line names.
func intentOf(line []byte) (string, bool) {
	const key = `"intent":"`
	i := bytes.Index(line, []byte(key))
	if i < 0 || len(line) < i+len(key)+64 {
		return "", false
	}
	h := string(line[i+len(key) : i+len(key)+64])
	return h, isHash(h)
}
