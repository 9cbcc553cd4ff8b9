package board

import (
	"slices"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

func cleanItem(it *wire.Item) {
	it.Role, _ = sanitize.Line(it.Role, sanitize.LabelBytes)
	switch it.Kind {
	case wire.KindText:
		it.Text, _ = sanitize.Block(it.Text, sanitize.MessageBytes)
	case wire.KindMarkdown, wire.KindCode:
		it.Text, _ = sanitize.Block(it.Text, sanitize.CodeBytes)
	case wire.KindLink:
		it.Text, _ = sanitize.Line(it.Text, sanitize.TitleBytes)
	}
	if t := it.Tool; t != nil {
		t.Name, _ = sanitize.Line(t.Name, sanitize.TitleBytes)
		t.Summary, _ = sanitize.Block(t.Summary, sanitize.SummaryBytes)
		t.Output, _ = sanitize.Block(t.Output, sanitize.OutputBytes)
		t.Status, _ = sanitize.Line(t.Status, sanitize.LabelBytes)
	}
}

func itemText(it *wire.Item) int {
	n := itemOverhead + 2*(len(it.Text)+len(it.URL)+len(it.Role))
	if t := it.Tool; t != nil {
		n += 2 * (len(t.Name) + len(t.Summary) + len(t.Output) + len(t.Status))
	}
	return n
}

// trim drops what keeps the board over its limits: the oldest items of a
// conversation over MaxItems, the oldest closed conversations over
// MaxConversations, and then the oldest items anywhere while the text is
// over budget. Must be called with b.mu held.
func (b *Board) trim() {
	for _, c := range b.convs {
		if over := len(c.Items) - MaxItems; over > 0 {
			b.dropItems(c, over)
		}
	}
	// Over the limit, the oldest closed conversations go first, then the
	// oldest with no open question; the main one stays.
	for len(b.convs) > MaxConversations {
		i := slices.IndexFunc(b.convs, func(c *conv) bool { return c.Closed && c.ID != b.opts.Main.ID })
		if i < 0 {
			i = slices.IndexFunc(b.convs, func(c *conv) bool { return len(c.open) == 0 && c.ID != b.opts.Main.ID })
		}
		if i < 0 {
			break
		}
		b.removeConv(i)
	}
	for b.text > textBudget {
		dropped := false
		for _, c := range b.convs {
			if len(c.Items) > 1 || len(c.Items) == 1 && b.text-c.sizes[0] > 0 {
				b.dropItems(c, 1)
				dropped = true
				break
			}
		}
		if !dropped {
			break
		}
	}
}

func (b *Board) dropItems(c *conv, n int) {
	for _, s := range c.sizes[:n] {
		b.text -= s
	}
	c.Items = slices.Delete(c.Items, 0, n)
	c.sizes = slices.Delete(c.sizes, 0, n)
}

func (b *Board) removeConv(i int) {
	c := b.convs[i]
	for _, s := range c.sizes {
		b.text -= s
	}
	delete(b.byID, c.ID)
	b.convs = slices.Delete(b.convs, i, i+1)
}
