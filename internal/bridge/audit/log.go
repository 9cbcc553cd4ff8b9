package audit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Content says how much the log keeps of what people wrote (A4).
type Content int

const (
	// ContentFull keeps send previews, new names and reasons.
	ContentFull Content = iota
	// ContentNone (COLLIE_AUDIT_CONTENT=none) replaces every string in a
	// line's details with "(masked)", but the ids: requestId, question,
	// revision, turn, conversation, space, tab, actionId, starterId and
	// result. The session, device, event and time stay too.
	ContentNone
)

// ParseContent reads the value of COLLIE_AUDIT_CONTENT: "" or "full" for
// ContentFull, "none" for ContentNone.
func ParseContent(v string) (Content, error) {
	switch v {
	case "", "full":
		return ContentFull, nil
	case "none":
		return ContentNone, nil
	}
	return ContentFull, fmt.Errorf("COLLIE_AUDIT_CONTENT is %q; set it to none to mask the text in the audit log, or unset it", v)
}

// Defaults of Options.
const (
	DefaultSyncWait    = 100 * time.Millisecond
	DefaultMaxBytes    = 16 << 20
	DefaultKeepRotated = 8
	DefaultMaxAge      = 30 * 24 * time.Hour
	DefaultMaxCount    = 20000
)

// Options configure Open. Only Dir is needed.
type Options struct {
	// Dir is the state folder (config.Paths.State). Open creates it with
	// mode 0700 when it is missing.
	Dir string
	// Content is read once from COLLIE_AUDIT_CONTENT by the caller
	// (ParseContent).
	Content Content
	// NoSync turns off fsync. By default each Record waits, at most
	// SyncWait, for its line to reach the disk; concurrent Records share
	// one fsync.
	NoSync   bool
	SyncWait time.Duration // DefaultSyncWait when 0
	// MaxBytes is the size past which audit.log is rotated before the
	// next line; KeepRotated how many rotated files are kept.
	MaxBytes    int64 // DefaultMaxBytes when 0
	KeepRotated int   // DefaultKeepRotated when 0
	// Retention of receipts (A6).
	Retention Retention
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// OnRepair hears of each Repair made after Open (Open returns its own
	// in Opened.Repaired): another process writing the same log crashed
	// mid-line. Nil drops them.
	OnRepair func(Repair)
	// Anchor, when not nil, is given the chain's head every AnchorEvery
	// records this Log writes and at Close, for the caller to write
	// somewhere the log's writer cannot rewrite (the journal); see Anchor.
	Anchor      func(Anchor)
	AnchorEvery int // DefaultAnchorEvery when 0

	// syncFile is fsync; tests make it slow or fail.
	syncFile func(*os.File) error
	// writeFile writes one line to the log; tests make it stop mid-line.
	writeFile func(*os.File, []byte) (int, error)
}

// Retention is how long receipts are kept: at most MaxAge, and only the
// newest MaxCount. Both are enforced on every read; the file is pruned
// at Open, once a day, and when it holds half as many again as it keeps.
type Retention struct {
	MaxAge   time.Duration // DefaultMaxAge when 0
	MaxCount int           // DefaultMaxCount when 0
}

// Opened tells the caller what Open found, for one log line each.
type Opened struct {
	// Tightened lists files that group or others could read or write,
	// which Open set to 0600 (A1).
	Tightened []Tightened
	// Repaired lists what Open mended at the end of audit.log before
	// writing on: a write cut short (a crash, a full disk) cut off, a
	// record's missing newline added, a last line that is no record
	// noted. Log a warning for each.
	Repaired []Repair
	// Pruned counts receipts removed by the retention.
	Pruned int
	// BadReceipts counts lines of the receipts file that could not be
	// read, which were dropped.
	BadReceipts int
	// Recovered counts receipts filed from the log for taps whose receipt
	// a crash lost (the log, not the receipts file, is synced per line).
	Recovered int
}

// Tightened is one file whose mode Open tightened to 0600.
type Tightened struct {
	Path string
	Was  fs.FileMode
}

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("the audit log is closed")

// Log is the audit log and the receipts of one state folder. Its methods
// are safe for concurrent use.
type Log struct {
	opts Options
	dir  string // opts.Dir, absolute (Anchor.Dir)
	path string
	mask bool

	mu     sync.Mutex  // orders appends; guards everything below up to sync state
	lockF  *os.File    // audit.lock, whose flock orders appends across processes
	f      *os.File    // audit.log, O_APPEND
	fi     os.FileInfo // f's, when opened: its inode
	size   int64       // f's size after our last write
	head   string      // hash of the last record: the next line's prev
	buf    []byte
	rc     *receipts
	closed bool
	anchor anchorState

	// fmu keeps f and rc.f open while the syncer syncs them: rotation and
	// compaction swap them under mu and fmu.
	fmu sync.RWMutex

	written atomic.Uint64 // lines written; a line's sequence number
	smu     sync.Mutex    // sync state:
	synced  uint64        // lines on disk
	errFrom uint64        // lines errFrom+1..errTo were in a failed fsync
	errTo   uint64
	syncErr error
	bgErr   error         // the pruner's last error, for the next Record
	done    chan struct{} // closed after each fsync round
	kick    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
}

// Open opens the log in opts.Dir, creating it, and readies receipts.
func Open(opts Options) (*Log, Opened, error) {
	var op Opened
	if opts.Dir == "" {
		return nil, op, errors.New("audit: no state folder given")
	}
	if opts.SyncWait <= 0 {
		opts.SyncWait = DefaultSyncWait
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.KeepRotated <= 0 {
		opts.KeepRotated = DefaultKeepRotated
	}
	if opts.Retention.MaxAge <= 0 {
		opts.Retention.MaxAge = DefaultMaxAge
	}
	if opts.Retention.MaxCount <= 0 {
		opts.Retention.MaxCount = DefaultMaxCount
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.syncFile == nil {
		opts.syncFile = (*os.File).Sync
	}
	if opts.writeFile == nil {
		opts.writeFile = (*os.File).Write
	}
	if opts.AnchorEvery <= 0 {
		opts.AnchorEvery = DefaultAnchorEvery
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, op, fmt.Errorf("create the state folder %s: %w; check that its parent is yours and writable", opts.Dir, err)
	}
	abs, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, op, fmt.Errorf("audit: the state folder %s: %w", opts.Dir, err)
	}
	l := &Log{
		opts: opts,
		dir:  abs,
		path: filepath.Join(opts.Dir, LogName),
		mask: opts.Content == ContentNone,
		head: GenesisPrev,
		done: make(chan struct{}),
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
	}
	if l.lockF, err = openPrivate(filepath.Join(opts.Dir, lockName), os.O_RDWR, &op); err != nil {
		return nil, op, err
	}
	unlock, err := flock(l.lockF, true)
	if err != nil {
		l.lockF.Close()
		return nil, op, fmt.Errorf("lock the audit log: %w", err)
	}
	err = l.open(&op)
	unlock()
	if err != nil {
		l.lockF.Close()
		if l.f != nil {
			l.f.Close()
		}
		if l.rc != nil && l.rc.f != nil {
			l.rc.f.Close()
		}
		return nil, op, err
	}
	l.wg.Add(2)
	go l.syncer()
	go l.pruner()
	return l, op, nil
}

// open does Open's work under the flock.
func (l *Log) open(op *Opened) error {
	rotated, err := Files(l.opts.Dir)
	if err != nil {
		return err
	}
	for _, p := range rotated {
		if p != l.path {
			if err := tighten(p, op); err != nil {
				return err
			}
		}
	}
	if l.f, err = openPrivate(l.path, os.O_WRONLY|os.O_APPEND, op); err != nil {
		return err
	}
	if err := l.readHead(func(r Repair) { op.Repaired = append(op.Repaired, r) }); err != nil {
		return err
	}
	l.anchor.last = l.head
	l.rc, err = openReceipts(filepath.Join(l.opts.Dir, ReceiptsName), l.opts.Retention, &l.fmu, op)
	if err != nil {
		return err
	}
	if op.Recovered, err = l.recoverReceipts(l.opts.Now()); err != nil {
		return err
	}
	op.Pruned, err = l.rc.prune(l.opts.Now())
	return err
}

// openPrivate opens (creating) a file of the log with mode 0600, never
// through a symbolic link, tightening a more open mode (A1).
func openPrivate(path string, flag int, op *Opened) (*os.File, error) {
	if err := tighten(path, op); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, flag|os.O_CREATE|oNoFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w; check that the state folder is yours and writable", path, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("it is not a regular file")
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w; move it away so Collie can make its own", path, err)
	}
	return f, nil
}

// tighten sets an existing file to 0600 when group or others have any
// permission on it, noting it in op. A symbolic link is refused.
func tighten(path string, op *Opened) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link; remove it so Collie writes the audit log itself", path)
	}
	if perm := fi.Mode().Perm(); unixModes && perm&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return fmt.Errorf("tighten %s from %04o to 0600: %w; run chmod 600 %s", path, perm, err, path)
		}
		op.Tightened = append(op.Tightened, Tightened{path, perm})
	}
	return nil
}

// Record appends the line of one write from a device and, for the five
// taps (answer, send, abort, action, starter.start), files its receipt,
// which it returns (A6). It returns an error the caller should log and
// otherwise go on: the log blocks nothing (A5). With fsync on, it waits
// at most SyncWait for the line to reach the disk; a line still waiting
// then is written, and reaches the disk with the next fsync. A write that
// fails (a full disk) leaves audit.log as it was.
func (l *Log) Record(who Who, ev Event) (Receipt, error) {
	if ev == nil {
		return Receipt{}, errors.New("audit: Record needs an event")
	}
	if tap(ev) && ev.result().status == "" {
		return Receipt{}, fmt.Errorf("audit: the %s event has no result; give audit.OK, audit.Refused(reason) or audit.Failed(reason)", ev.Name())
	}
	rc, _, err := l.record(who, ev, ev.result(), "")
	return rc, err
}

// record appends ev's line with the result res (and intent, the pending
// line it ends, when not ""), files a tap's receipt, hands a due anchor
// to Options.Anchor and waits for fsync. It returns the line's hash.
func (l *Log) record(who Who, ev Event, res Result, intent string) (Receipt, string, error) {
	rc, hash, seq, anc, err := l.append(who, ev, res, intent)
	if err == nil && !l.opts.NoSync {
		err = l.waitSync(seq)
	}
	if anc != nil { // after the line is on disk, or SyncWait passed
		l.opts.Anchor(*anc)
	}
	if err != nil {
		return rc, hash, err
	}
	l.smu.Lock()
	err, l.bgErr = l.bgErr, nil
	l.smu.Unlock()
	if err != nil {
		return rc, hash, fmt.Errorf("audit: the line is written; pruning receipts failed earlier: %w", err)
	}
	return rc, hash, nil
}

func (l *Log) append(who Who, ev Event, res Result, intent string) (Receipt, string, uint64, *Anchor, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Receipt{}, "", 0, nil, ErrClosed
	}
	now := l.opts.Now() // under the lock: the lines' times follow their order
	unlock, err := flock(l.lockF, true)
	if err != nil {
		return Receipt{}, "", 0, nil, fmt.Errorf("audit: the %s line was not recorded: lock %s: %w", ev.Name(), lockName, err)
	}
	defer unlock()
	if err := l.catchUp(); err != nil {
		return Receipt{}, "", 0, nil, fmt.Errorf("audit: the %s line was not recorded: %w", ev.Name(), err)
	}
	line := encodeLineAs(l.buf[:0], now, who, ev, res, intent, l.mask, l.head)
	if l.size > 0 && l.size+int64(len(line))+1 > l.opts.MaxBytes {
		if err := l.rotate(now); err != nil {
			return Receipt{}, "", 0, nil, err
		}
	}
	out := append(line, '\n')
	l.buf = out[:0]
	if err := l.writeLine(out); err != nil {
		return Receipt{}, "", 0, nil, fmt.Errorf("audit: the %s line was not recorded: %w", ev.Name(), err)
	}
	hash := hashLine(line)
	l.head = hash
	seq := l.written.Add(1)
	anc := l.anchorDue(now)
	if !tap(ev) || res.status == StatusPending {
		return Receipt{}, hash, seq, anc, nil
	}
	rc := Receipt{
		ID:        hash,
		Time:      now.UTC().Truncate(time.Millisecond),
		Device:    cut(who.Device, idBytes),
		Session:   cut(who.Session, idBytes),
		Event:     ev.Name(),
		RequestID: cut(requestID(ev), idBytes),
		Result:    res.status,
	}
	if err := l.rc.catchUp(); err != nil {
		return rc, hash, seq, anc, fmt.Errorf("audit: the line is written, but its receipt is not: %w", err)
	}
	if err := l.rc.add(rc, now); err != nil {
		return rc, hash, seq, anc, fmt.Errorf("audit: the line is written, but its receipt is not: %w", err)
	}
	return rc, hash, seq, anc, nil
}

// writeLine appends out, a whole line with its newline, in one write(2)
// (O_APPEND). A write cut short (a full disk) is cut back off, so the
// file is as it was and no later line follows a fragment; when even that
// fails, the file's size no longer matches l.size, and the next append
// mends the end first (readHead) or writes nothing. Caller holds mu and
// the flock.
func (l *Log) writeLine(out []byte) error {
	n, err := l.opts.writeFile(l.f, out)
	if err == nil && n == len(out) {
		l.size += int64(n)
		return nil
	}
	if err == nil {
		err = fmt.Errorf("write %s: %w", l.path, io.ErrShortWrite)
	}
	if n > 0 {
		if terr := l.f.Truncate(l.size); terr != nil {
			return fmt.Errorf("%w; and the %d bytes written could not be cut off again (%v): the next line first mends the end", err, n, terr)
		}
	}
	return fmt.Errorf("%w; nothing of the line was kept; check that the disk has room and the file is yours", err)
}

// onRepair passes r to Options.OnRepair, if set.
func (l *Log) onRepair(r Repair) {
	if l.opts.OnRepair != nil {
		l.opts.OnRepair(r)
	}
}

// catchUp notices, under the flock, what another process did since our
// last append: it rotated or removed audit.log (reopen it), or appended
// to it (read the new head). One lstat tells: the path's file is still
// ours (the inode noted when it was opened) and has the size we left.
func (l *Log) catchUp() error {
	pi, err := os.Lstat(l.path)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("audit: stat %s: %w", l.path, err)
	case err != nil || !os.SameFile(l.fi, pi):
		var op Opened
		f, err := openPrivate(l.path, os.O_WRONLY|os.O_APPEND, &op)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		l.swap(f)
		return l.readHead(l.onRepair)
	case pi.Size() != l.size:
		return l.readHead(l.onRepair)
	}
	return nil
}

// swap makes f the log file, closing the one before; caller holds mu.
func (l *Log) swap(f *os.File) {
	l.fmu.Lock()
	if l.f != nil {
		l.f.Close()
	}
	l.f = f
	l.fmu.Unlock()
}

// rotate renames audit.log to audit.log.<time> and starts a new one,
// whose first line will chain to the old one's last record; it removes
// rotated files past KeepRotated. Caller holds mu and the flock.
func (l *Log) rotate(now time.Time) error {
	if !l.opts.NoSync {
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("audit: sync %s before rotating it: %w", l.path, err)
		}
	}
	to := filepath.Join(l.opts.Dir, rotatedName(now))
	for i := 1; ; i++ {
		if _, err := os.Lstat(to); errors.Is(err, fs.ErrNotExist) {
			break
		}
		to = fmt.Sprintf("%s-%d", filepath.Join(l.opts.Dir, rotatedName(now)), i)
	}
	if err := os.Rename(l.path, to); err != nil {
		return fmt.Errorf("audit: rotate %s: %w", l.path, err)
	}
	var op Opened
	f, err := openPrivate(l.path, os.O_WRONLY|os.O_APPEND, &op)
	if err != nil {
		return fmt.Errorf("audit: start a new log after rotating: %w", err)
	}
	l.swap(f)
	if l.fi, err = f.Stat(); err != nil {
		return fmt.Errorf("audit: stat %s: %w", l.path, err)
	}
	l.size = 0
	syncDir(l.opts.Dir)
	paths, err := Files(l.opts.Dir)
	if err != nil {
		return err
	}
	var old []string
	for _, p := range paths {
		if p != l.path {
			old = append(old, p)
		}
	}
	for len(old) > l.opts.KeepRotated {
		if err := os.Remove(old[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("audit: remove the oldest rotated log: %w", err)
		}
		old = old[1:]
	}
	return nil
}

// syncDir makes a rename or a new file in dir durable; best effort.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Head is the hash of the last record written: the next line's prev.
// Logging it elsewhere (the journal) anchors the chain (see Report.Head).
func (l *Log) Head() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

// Close writes what is pending to the disk and closes the files.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	anc := l.takeAnchor()
	l.mu.Unlock()
	if anc != nil {
		l.opts.Anchor(*anc)
	}
	close(l.stop)
	l.wg.Wait()
	l.smu.Lock()
	err := l.syncErr
	if l.errTo <= l.errFrom {
		err = nil
	}
	l.smu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opts.NoSync {
		if serr := l.opts.syncFile(l.rc.f); err == nil {
			err = serr
		}
	}
	for _, c := range []*os.File{l.f, l.rc.f, l.lockF} {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
