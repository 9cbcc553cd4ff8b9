package sanitize_test

import (
	"fmt"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

func ExampleLine() {
	// The right-to-left override would make the title read "invoiceexe.pdf".
	title, changed := sanitize.Line("invoice\u202Efdp.exe\n", sanitize.TitleBytes)
	fmt.Printf("%q %v\n", title, changed)

	title, changed = sanitize.Line("Deploy build 4217 to production", 16)
	fmt.Printf("%q %v\n", title, changed)
	// Output:
	// "invoicefdp.exe" true
	// "Deploy build …" true
}

func ExampleBlock() {
	out, changed := sanitize.Block("ok\r\n\tdone\x1b[0m\n", sanitize.OutputBytes)
	fmt.Printf("%q %v\n", out, changed)
	// Output: "ok\n\tdone[0m\n" true
}

func ExampleLabel() {
	label, _ := sanitize.Label("Déployer en production", sanitize.BeltChars)
	fmt.Println(label)
	// Output: Déployer en pro…
}

func ExampleValidID() {
	fmt.Println(sanitize.ValidID("conv-42"), sanitize.ValidID("../conv"), sanitize.ValidID("a\u00a0b"))
	// Output: true false false
}

func ExampleCheckLink() {
	fmt.Println(sanitize.CheckLink("https://example.com/docs"))
	fmt.Println(sanitize.CheckLink("javascript:alert(1)"))
	fmt.Println(sanitize.CheckLink("https://user:pw@example.com/"))
	// Output:
	// <nil>
	// link is not https
	// link contains a user name or password
}

func ExampleCheckSend() {
	fmt.Println(sanitize.CheckSend(""))
	// Output: the text is empty; type at least one character
}
