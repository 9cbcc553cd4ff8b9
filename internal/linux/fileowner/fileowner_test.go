package fileowner

import (
	"io/fs"
	"os"
	"runtime"
	"testing"
	"time"
)

type madeUp struct{}

func (madeUp) Name() string       { return "x" }
func (madeUp) Size() int64        { return 0 }
func (madeUp) Mode() fs.FileMode  { return 0 }
func (madeUp) ModTime() time.Time { return time.Time{} }
func (madeUp) IsDir() bool        { return false }
func (madeUp) Sys() any           { return nil }

func TestUID(t *testing.T) {
	fi, err := os.Stat(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	uid, ok := UID(fi)
	if runtime.GOOS != "windows" && (!ok || uid != os.Getuid()) {
		t.Errorf("UID(a folder of ours) = %d, %v; want %d, true", uid, ok, os.Getuid())
	}
	if _, ok := UID(madeUp{}); ok {
		t.Error("UID of a FileInfo with no system data said it knew the owner")
	}
}
