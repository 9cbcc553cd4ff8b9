package a

import (
	"os"
	"testing"
)

func TestPass(t *testing.T) { t.Log("not shown") }

func TestSkip(t *testing.T) { t.Skip("skipped: needs root to start a user manager") }

func TestTable(t *testing.T) {
	for _, name := range []string{"one", "two"} {
		t.Run(name, func(t *testing.T) { t.Skipf("chromium is not installed") })
	}
}

func TestFail(t *testing.T) {
	if os.Getenv("SUMMARY_FAIL") == "" {
		return
	}
	t.Log("the log of a failed test")
	t.Fatal("boom")
}
