package audit

import (
	"errors"
	"fmt"
	"time"
)

// waitSync waits until line seq is on disk, or SyncWait passes.
func (l *Log) waitSync(seq uint64) error {
	select {
	case l.kick <- struct{}{}:
	default: // a round is asked for already; it starts after this line was written
	}
	timer := time.NewTimer(l.opts.SyncWait)
	defer timer.Stop()
	for {
		l.smu.Lock()
		if l.synced >= seq {
			var err error
			if seq > l.errFrom && seq <= l.errTo {
				err = fmt.Errorf("audit: the line is written, but fsync failed: %w; check the disk (dmesg shows its errors)", l.syncErr)
			}
			l.smu.Unlock()
			return err
		}
		done := l.done
		l.smu.Unlock()
		select {
		case <-done:
		case <-timer.C:
			return nil // written; the next round puts it on disk
		}
	}
}

// syncer runs fsync rounds: each covers every line written before it
// starts, so concurrent Records share one fsync (group commit).
func (l *Log) syncer() {
	defer l.wg.Done()
	for {
		select {
		case <-l.kick:
		case <-l.stop:
			l.syncRound()
			return
		}
		l.syncRound()
	}
}

func (l *Log) syncRound() {
	target := l.written.Load()
	l.fmu.RLock()
	err := l.opts.syncFile(l.f) // not the receipts: Open recovers them from the log
	l.fmu.RUnlock()
	l.smu.Lock()
	if err != nil {
		l.errFrom, l.errTo, l.syncErr = l.synced, target, err
	}
	l.synced = max(l.synced, target)
	close(l.done)
	l.done = make(chan struct{})
	l.smu.Unlock()
}

// pruneEvery is how often the pruner looks whether a day has passed
// since the receipts were last pruned.
const pruneEvery = time.Hour

// pruner prunes receipts once a day, by the Log's clock.
func (l *Log) pruner() {
	defer l.wg.Done()
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.pruneTick()
		case <-l.stop:
			return
		}
	}
}

// pruneTick prunes the receipts when a day has passed since they were
// last pruned; an error waits for the next Record.
func (l *Log) pruneTick() {
	err := l.locked(func() error { return l.rc.maybePrune(l.opts.Now()) })
	if err != nil && !errors.Is(err, ErrClosed) {
		l.smu.Lock()
		l.bgErr = err
		l.smu.Unlock()
	}
}
