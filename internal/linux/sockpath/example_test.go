package sockpath_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/collie-linux/collie/internal/linux/sockpath"
)

// The bridge checks the whole path before every connection. T7 shows the
// layout that passes: /run/user/1000 and /run/user/1000/desk are 0700 and
// belong to the user, and app.sock is a socket with mode 0600.
func ExampleCheck() {
	err := sockpath.Check("/run/user/1000/desk/app.sock", os.Getuid())
	var e *sockpath.Error
	switch {
	case err == nil:
		fmt.Println("private: connect")
	case errors.As(err, &e) && e.NoSocket:
		fmt.Println("the durable agent is not running:", e.Reason)
	default:
		fmt.Println("refused:", err)
	}
}
