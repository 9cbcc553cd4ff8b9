package tomlstrict

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"
)

// TypeError is a value of another type than its setting takes, such as
// listen = 8780 where listen takes text: go-toml's own error for it names
// Go's types ("cannot decode TOML integer into struct field
// config.Devices.Listen of type string"), not the file's.
type TypeError struct {
	Line, Column int
	Key          []string // the setting, from the table down
	Got          string   // what the file has: "a number", "text", ...
	Want         string   // what the setting takes
	Example      string   // the setting written right, such as listen = "127.0.0.1:8780"
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("line %d: setting %s is %s, but it takes %s, such as %s",
		e.Line, quote(strings.Join(e.Key, ".")), e.Got, e.Want, e.Example)
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType        = reflect.TypeFor[time.Time]()
)

// got says what kind of value a node is, as a sentence says it.
func got(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "text"
	case unstable.Integer:
		return "a whole number"
	case unstable.Float:
		return "a decimal number"
	case unstable.Bool:
		return "true or false"
	case unstable.Array:
		return "a list"
	case unstable.InlineTable, unstable.Table:
		return "a table"
	case unstable.ArrayTable:
		return "a list of tables"
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		return "a date or time"
	}
	return "a value of another kind"
}

// takes says what a field of type t takes, whether a node of kind k fits,
// and an example value (example is the field's own, when it has one).
func takes(t reflect.Type, k unstable.Kind) (want string, fits bool, sample string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "a date and time", k == unstable.DateTime || k == unstable.LocalDateTime || k == unstable.LocalDate, "2026-12-01T10:00:00Z"
	case reflect.PointerTo(t).Implements(textUnmarshaler):
		return "text in quotes", k == unstable.String, `"text"`
	}
	switch t.Kind() {
	case reflect.String:
		return "text in quotes", k == unstable.String, `"text"`
	case reflect.Bool:
		return "true or false", k == unstable.Bool, "true"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number", k == unstable.Integer, "10"
	case reflect.Float32, reflect.Float64:
		return "a number", k == unstable.Float || k == unstable.Integer, "1.5"
	case reflect.Slice, reflect.Array:
		ew, _, es := takes(t.Elem(), unstable.Invalid)
		if elem(t.Elem()).Kind() == reflect.Struct {
			return "a list of tables", k == unstable.Array, "[{ ... }]"
		}
		return "a list of " + plural(ew), k == unstable.Array, "[" + es + ", " + es + "]"
	case reflect.Struct, reflect.Map:
		return "a table", k == unstable.InlineTable, "{ ... }"
	}
	return "", true, "" // an interface takes anything
}

// plural makes "text in quotes" "texts in quotes" and the like, for a
// list's elements.
func plural(want string) string {
	switch want {
	case "text in quotes":
		return "texts in quotes"
	case "true or false":
		return "true or false values"
	case "a whole number":
		return "whole numbers"
	case "a number":
		return "numbers"
	case "a table":
		return "tables"
	}
	return want
}

// checkType refuses a value v of another type than t, at the setting path
// (line and column of its key).
func checkType(t reflect.Type, v *unstable.Node, path []string, example string, line, col int) error {
	want, fits, sample := takes(t, v.Kind)
	if fits {
		if v.Kind == unstable.Array {
			return checkElems(t, v, path, example, line, col)
		}
		return nil
	}
	return typeError(path, v.Kind, want, sample, example, line, col)
}

// checkElems checks each element of the list v against the element type
// of t.
func checkElems(t reflect.Type, v *unstable.Node, path []string, example string, line, col int) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
		return nil
	}
	it := v.Children()
	for it.Next() {
		n := it.Node()
		if _, fits, _ := takes(t.Elem(), n.Kind); !fits {
			want, _, sample := takes(t, unstable.Array)
			if example == "" {
				example = sample
			}
			return &TypeError{Line: line, Column: col, Key: path, Got: "a list with " + got(n.Kind) + " in it",
				Want: want, Example: path[len(path)-1] + " = " + example}
		}
	}
	return nil
}

func typeError(path []string, k unstable.Kind, want, sample, example string, line, col int) error {
	if example == "" {
		example = sample
	}
	name := path[len(path)-1]
	ex := name + " = " + example
	if want == "a table" {
		ex = "[" + strings.Join(path, ".") + "] with its settings on the lines below"
	}
	return &TypeError{Line: line, Column: col, Key: path, Got: got(k), Want: want, Example: ex}
}

// checkTable refuses a table header [a.b] or [[a.b]] for a setting that
// is not a table, or a list of tables.
func checkTable(p *unstable.Parser, e *unstable.Node, t reflect.Type, path []string) error {
	if t == nil {
		return nil
	}
	keys := e.Key()
	keys.Next()
	pos := p.Shape(keys.Node().Raw).Start
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	isList := base.Kind() == reflect.Slice || base.Kind() == reflect.Array
	switch {
	case e.Kind == unstable.Table && (base.Kind() == reflect.Struct || base.Kind() == reflect.Map || base.Kind() == reflect.Interface):
		return nil
	case e.Kind == unstable.ArrayTable && isList && elem(base).Kind() == reflect.Struct:
		return nil
	case e.Kind == unstable.ArrayTable && base.Kind() == reflect.Interface:
		return nil
	}
	want, _, sample := takes(t, unstable.Invalid)
	name := path[len(path)-1]
	ex := name + " = " + sample
	if isList && elem(base).Kind() == reflect.Struct {
		ex = "[[" + strings.Join(path, ".") + "]]"
	}
	return &TypeError{Line: pos.Line, Column: pos.Column, Key: path, Got: got(e.Kind), Want: want, Example: ex}
}
