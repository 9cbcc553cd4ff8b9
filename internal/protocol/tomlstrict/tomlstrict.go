// Package tomlstrict decodes a TOML configuration file into a Go struct
// with its keys in their exact case. go-toml/v2 matches a key to a field
// case-insensitively ("Listen" fills the field tagged "listen", even with
// DisallowUnknownFields), so a file could say one thing to a reader of
// TOML, where keys are case-sensitive, and another to Collie. Decode first
// walks every key of the file against the struct's tags and refuses one
// that names a field only in another case, saying where and what to write;
// then it decodes with go-toml/v2, unknown keys refused. TOML itself
// forbids a key given twice, and go-toml refuses it.
package tomlstrict

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// CaseError is a key that names a field only in another case.
type CaseError struct {
	Line, Column int
	Key          []string // the key as written, from the table down
	Want         string   // the name of the field, in its case
}

func (e *CaseError) Error() string {
	return fmt.Sprintf("line %d column %d: unknown setting %s; setting names are case-sensitive: write %s",
		e.Line, e.Column, quote(strings.Join(e.Key, ".")), quote(e.Want))
}

// quote quotes a key from the file for a message: ASCII only, cut.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.QuoteToASCII(s[:64]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

// Decode decodes data into v, a pointer to a struct, refusing a key in
// another case than its field's (a *CaseError), a value of the wrong type
// (a *TypeError) and unknown keys (go-toml's *toml.StrictMissingError). A
// syntax error or a key given twice is go-toml's *toml.DecodeError.
func Decode(data []byte, v any) error {
	if err := checkCase(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// checkCase walks every key of data against t. A file that does not parse
// passes here, so that go-toml reports the syntax error.
func checkCase(data []byte, t reflect.Type) error {
	var p unstable.Parser
	p.Reset(data)
	var table reflect.Type = t
	var tablePath []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			keys := e.Key()
			tt, path, err := resolve(&p, t, nil, &keys)
			if err != nil {
				return err
			}
			if err := checkTable(&p, e, tt, path); err != nil {
				return err
			}
			if e.Kind == unstable.ArrayTable && tt != nil {
				tt = elem(tt)
			}
			table, tablePath = tt, path
		case unstable.KeyValue:
			if err := checkKeyValue(&p, table, tablePath, e); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkKeyValue(p *unstable.Parser, t reflect.Type, path []string, kv *unstable.Node) error {
	if t == nil {
		return nil
	}
	keys := kv.Key()
	vt, vpath, example, err := resolveField(p, t, path, &keys)
	if err != nil || vt == nil {
		return err
	}
	first := kv.Key()
	first.Next()
	pos := p.Shape(first.Node().Raw).Start
	if err := checkType(vt, kv.Value(), vpath, example, pos.Line, pos.Column); err != nil {
		return err
	}
	return checkValue(p, vt, vpath, kv.Value())
}

// checkValue looks into inline tables, and arrays of them.
func checkValue(p *unstable.Parser, t reflect.Type, path []string, v *unstable.Node) error {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if err := checkKeyValue(p, t, path, it.Node()); err != nil {
				return err
			}
		}
	case unstable.Array:
		et := elem(t)
		if et == t {
			return nil
		}
		it := v.Children()
		for it.Next() {
			if err := checkValue(p, et, path, it.Node()); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolve follows the key parts in keys from t. It returns the type they
// lead to, or nil where the walk stops (a map, a key go-toml will refuse
// as unknown, a value that is not a table).
func resolve(p *unstable.Parser, t reflect.Type, path []string, keys *unstable.Iterator) (reflect.Type, []string, error) {
	rt, path, _, err := resolveField(p, t, path, keys)
	return rt, path, err
}

// resolveField is resolve that also returns the example of the field the
// keys lead to (its tag example:"...").
func resolveField(p *unstable.Parser, t reflect.Type, path []string, keys *unstable.Iterator) (reflect.Type, []string, string, error) {
	path = append([]string(nil), path...)
	example := ""
	for keys.Next() {
		k := keys.Node()
		name := string(k.Data)
		path = append(path, name)
		st := elem(t)
		if st == nil || st.Kind() != reflect.Struct {
			return nil, path, "", nil
		}
		ft, want, ex, found := field(st, name)
		switch {
		case found && want == name:
			t, example = ft, ex
		case found:
			pos := p.Shape(k.Raw).Start
			return nil, path, "", &CaseError{Line: pos.Line, Column: pos.Column, Key: path, Want: want}
		default:
			return nil, path, "", nil
		}
	}
	return t, path, example, nil
}

// elem goes through pointers and, for a list of tables, to its element.
func elem(t reflect.Type) reflect.Type {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		t = t.Elem()
	}
	return t
}

// field finds the field of struct t that go-toml would fill for key: the
// one whose name is key, else one whose name is key in another case. want
// is the field's own name.
func field(t reflect.Type, key string) (ft reflect.Type, want, example string, found bool) {
	var foldType reflect.Type
	var fold, foldExample string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("toml")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			if et := elem(f.Type); et != nil && et.Kind() == reflect.Struct {
				if ft, want, ex, found := field(et, key); found {
					if want == key {
						return ft, want, ex, true
					}
					foldType, fold, foldExample = ft, want, ex
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		switch {
		case name == key:
			return f.Type, name, f.Tag.Get("example"), true
		case strings.EqualFold(name, key) && fold == "":
			foldType, fold, foldExample = f.Type, name, f.Tag.Get("example")
		}
	}
	return foldType, fold, foldExample, fold != ""
}
