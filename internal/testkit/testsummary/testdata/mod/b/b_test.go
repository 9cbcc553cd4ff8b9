package b

import "testing"

func TestChromium(t *testing.T) { t.Skip("chromium is not installed") }
