package guard

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/collie-linux/collie/internal/linux/atomicfile"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// FileName is the guard's file in the state folder.
const FileName = "push-guard.json"

// fileVersion is the version of the file's format.
const fileVersion = 1

// maxFile bounds the file read at start: MemoryKeys digests and an hour of
// counts are far below it.
const maxFile = 4 << 20

// file is push-guard.json. Times are Unix milliseconds; conversations and
// keys are digests (Digest), never agent text.
type file struct {
	Version int `json:"version"`
	// Sent: pushes sent in the last hour, oldest first.
	Sent []int64 `json:"sent"`
	// Conversations: per conversation digest (16 hex digits), its pushes
	// in the last minute.
	Conversations map[string][]int64 `json:"conversations"`
	// Held: questions held back in the last hour, as [Unix second, count].
	Held [][2]int64 `json:"held"`
	// SilentUntil ends the silent hour after a summary; 0: none.
	SilentUntil int64 `json:"silentUntil"`
	// SilentWhy is "unreadable" when the silent hour began because the
	// file could not be read; absent after a summary.
	SilentWhy string `json:"silentWhy,omitempty"`
	// Keys: the decided keys' digests, 8 bytes each, big-endian, oldest
	// first, in standard base64.
	Keys string `json:"keys"`
}

// Save writes the counts to the state file, whole or not at all, mode 0600,
// when they changed since the last Save. Pushes are counted before Save:
// a caller saves before it sends, so a crash after a push was sent cannot
// forget it. Safe for concurrent use; a Save that finds a newer one done
// does nothing.
func (g *Guard) Save() error {
	if g.path == "" {
		return nil
	}
	g.saveMu.Lock()
	defer g.saveMu.Unlock()
	g.mu.Lock()
	if !g.dirty {
		g.mu.Unlock()
		return nil
	}
	g.prune(g.now().UnixMilli())
	data, err := g.encode()
	gen := g.gen
	g.dirty = false
	g.mu.Unlock()
	if err == nil {
		err = atomicfile.Write(g.path, data)
	}
	if err != nil {
		g.mu.Lock()
		if g.gen == gen {
			g.dirty = true // try again at the next Save
		}
		g.mu.Unlock()
		return fmt.Errorf("save the push guard's counts to %s: %w", g.path, err)
	}
	return nil
}

// Dirty reports whether the counts changed since the last Save.
func (g *Guard) Dirty() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dirty
}

// encode writes the state as the file. Callers hold g.mu.
func (g *Guard) encode() ([]byte, error) {
	f := file{Version: fileVersion, Sent: g.st.sent, Conversations: map[string][]int64{}, SilentUntil: g.st.silent, SilentWhy: g.st.why}
	if f.Sent == nil {
		f.Sent = []int64{}
	}
	for c, ts := range g.st.conv {
		f.Conversations[hex16(c)] = ts
	}
	f.Held = make([][2]int64, len(g.st.held))
	for i, b := range g.st.held {
		f.Held[i] = [2]int64{b.sec, int64(b.count)}
	}
	keys := make([]byte, 8*len(g.st.keyRing))
	for i, k := range g.st.keyRing {
		binary.BigEndian.PutUint64(keys[8*i:], k)
	}
	f.Keys = base64.StdEncoding.EncodeToString(keys)
	return json.Marshal(f)
}

func hex16(v uint64) string { return fmt.Sprintf("%016x", v) }

// load reads the file at path, as of now. A missing file is a fresh state.
func load(path string, now time.Time) (state, error) {
	if _, err := atomicfile.RemoveStale(path); err != nil {
		return state{}, fmt.Errorf("remove what a killed save of %s left: %w", path, err)
	}
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newState(), nil
	}
	if err != nil {
		return state{}, fmt.Errorf("read the push guard's counts: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxFile+1))
	if err != nil {
		return state{}, fmt.Errorf("read the push guard's counts in %s: %w", path, err)
	}
	if len(data) > maxFile {
		return state{}, fmt.Errorf("%s is over %d bytes, so it is not the push guard's file", path, maxFile)
	}
	st, err := parse(data, now)
	if err != nil {
		return state{}, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// parse reads the file's bytes as of now: strict JSON, the closed schema
// above, every time list sorted. Times after now (the clock went back) are
// taken as now, so the counts never shrink by a clock's step back.
func parse(data []byte, now time.Time) (state, error) {
	var f file
	if err := jsonstrict.Unmarshal(data, &f); err != nil {
		return state{}, fmt.Errorf("not the push guard's file: %w", err)
	}
	if f.Version != fileVersion {
		return state{}, fmt.Errorf("the push guard's file has version %d, not %d", f.Version, fileVersion)
	}
	nowMS := now.UnixMilli()
	clamp := func(ts []int64) ([]int64, error) {
		out := make([]int64, len(ts))
		for i, t := range ts {
			if t < 0 {
				return nil, errors.New("a time before 1970")
			}
			out[i] = min(t, nowMS)
		}
		if !slices.IsSorted(out) {
			return nil, errors.New("times out of order")
		}
		return out, nil
	}
	st := newState()
	var err error
	if st.sent, err = clamp(f.Sent); err != nil {
		return state{}, fmt.Errorf("sent: %w", err)
	}
	for c, ts := range f.Conversations {
		v, perr := strconv.ParseUint(c, 16, 64)
		if perr != nil || len(c) != 16 {
			return state{}, fmt.Errorf("conversations: %q is not a digest", c)
		}
		if st.conv[v], err = clamp(ts); err != nil {
			return state{}, fmt.Errorf("conversations: %w", err)
		}
	}
	last := int64(-1)
	for _, h := range f.Held {
		if h[0] < 0 || h[1] < 1 || h[1] > 1<<31 || h[0] <= last {
			return state{}, errors.New("held: a bucket out of order or with no count")
		}
		last = h[0]
		st.held = append(st.held, heldBucket{min(h[0], nowMS/1000), int(h[1])})
	}
	if f.SilentUntil < 0 {
		return state{}, errors.New("silentUntil: a time before 1970")
	}
	// A silent hour never lasts longer than an hour from now.
	st.silent = min(f.SilentUntil, nowMS+Silence.Milliseconds())
	switch f.SilentWhy {
	case "", silentUnreadable:
		st.why = f.SilentWhy
	default:
		return state{}, fmt.Errorf("silentWhy: %q is not a reason the guard writes", f.SilentWhy)
	}
	keys, err := base64.StdEncoding.DecodeString(f.Keys)
	if err != nil || len(keys)%8 != 0 {
		return state{}, errors.New("keys: not a list of digests")
	}
	for i := 0; i < len(keys); i += 8 {
		k := binary.BigEndian.Uint64(keys[i:])
		if _, dup := st.keys[k]; dup {
			continue
		}
		if len(st.keyRing) >= MemoryKeys {
			delete(st.keys, st.keyRing[0])
			st.keyRing = st.keyRing[1:]
		}
		st.keys[k] = struct{}{}
		st.keyRing = append(st.keyRing, k)
	}
	return st, nil
}
