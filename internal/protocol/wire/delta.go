package wire

import (
	"errors"
	"fmt"
	"io"

	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// Snapshot deltas, an extension negotiated like waiting reads: in headers,
// never in the snapshot's closed schema.
//
//   - A bridge that takes deltas names ExtDelta in ExtensionsHeader and
//     sends the ETag of the snapshot it holds, alone, in If-None-Match.
//   - An agent that knows that snapshot, and can say what changed since in
//     a Delta, answers 200 with the Delta as its body, the new snapshot's
//     ETag, and "Collie-Delta: <the ETag it applies to>". For anything a
//     Delta cannot say, or an ETag it no longer knows, it answers with the
//     whole snapshot, as without the extension.
//   - The bridge applies a Delta to exactly the state whose ETag the
//     Collie-Delta header names. A Delta that does not apply cleanly is
//     refused, and the next read asks for the whole snapshot.
//
// The closed schema, cleaning (X1–X6), the limits and the 4 MiB cap hold
// for a Delta and for the state it produces (State.Apply).
const (
	// ExtDelta: the bridge takes snapshot deltas.
	ExtDelta = "delta"
	// DeltaHeader marks a 200 whose body is a Delta, and names the ETag of
	// the snapshot it applies to.
	DeltaHeader = "Collie-Delta"
)

// Delta is what changed in an agent's snapshot since the one an ETag
// names. Every member is optional; one left out is unchanged. A Delta never
// adds, removes or moves a space, a tab or a conversation: those changes
// come as a whole snapshot.
type Delta struct {
	Spaces        []SpaceTitle        `json:"spaces,omitempty"`        // new titles of spaces
	Tabs          []TabTitle          `json:"tabs,omitempty"`          // new titles of tabs
	Conversations []ConversationDelta `json:"conversations,omitempty"` // changes inside conversations
	// Belt and Starters, when present, replace the whole list ([] empties
	// it).
	Belt     *[]Button  `json:"belt,omitempty"`
	Starters *[]Starter `json:"starters,omitempty"`
}

// SpaceTitle is a space's new title.
type SpaceTitle struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// TabTitle is a tab's new title; a tab's id is unique in its space.
type TabTitle struct {
	Space string `json:"space"`
	ID    string `json:"id"`
	Title string `json:"title"`
}

// ConversationDelta is what changed in one conversation, applied in this
// order: title and closed, then the removals, then the items and questions
// in their order. An item (or question) whose id the conversation has
// replaces it where it is; one with a new id is added at the end. A
// removal of an id the conversation does not have changes nothing.
type ConversationDelta struct {
	ID              string     `json:"id"`
	Title           *string    `json:"title,omitempty"`
	Closed          *bool      `json:"closed,omitempty"`
	RemoveItems     []string   `json:"removeItems,omitempty"`
	Items           []Item     `json:"items,omitempty"`
	RemoveQuestions []string   `json:"removeQuestions,omitempty"`
	Questions       []Question `json:"questions,omitempty"`
}

// ErrDelta is the cause of every refused delta.
var ErrDelta = errors.New("the agent's delta does not apply")

func deltaErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrDelta, fmt.Sprintf(format, a...))
}

// DecodeDelta reads a delta reply of at most SnapshotCap bytes (X4) and
// decodes it by the closed schema. Invalid UTF-8 in display text is
// replaced by U+FFFD, as in a snapshot; an id that held it is no longer
// valid, so its object is dropped or the delta refused when it applies.
func DecodeDelta(r io.Reader, length int64) (*Delta, int, error) {
	data, err := ReadCapped(r, length, SnapshotCap)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrDelta, err)
	}
	d, err := ParseDelta(data)
	return d, len(data), err
}

// ParseDelta is DecodeDelta for bytes already read.
func ParseDelta(data []byte) (*Delta, error) {
	if len(data) > SnapshotCap {
		return nil, fmt.Errorf("%w: %w: %d bytes", ErrDelta, ErrTooLarge, len(data))
	}
	var d Delta
	err := unmarshalClosed(data, &d)
	var je *jsonstrict.Error
	if errors.As(err, &je) && je.Kind == jsonstrict.InvalidUTF8 {
		d = Delta{}
		if err = unmarshalClosed(data, &d, jsonstrict.ReplaceInvalidUTF8); err == nil {
			dropReplacedDeltaIDs(&d)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDelta, err)
	}
	return &d, nil
}

// dropReplacedDeltaIDs makes every id of d that holds U+FFFD invalid, as
// dropReplacedIDs does for a snapshot: a new item or question with such an
// id is dropped, and a delta that addresses a conversation, space or tab
// by one is refused.
func dropReplacedDeltaIDs(d *Delta) {
	snap := Snapshot{Spaces: []Space{{Tabs: []Tab{{Conversations: make([]Conversation, len(d.Conversations))}}}}}
	for i := range d.Conversations {
		snap.Spaces[0].Tabs[0].Conversations[i] = Conversation{ID: d.Conversations[i].ID, Items: d.Conversations[i].Items, Questions: d.Conversations[i].Questions}
	}
	if d.Belt != nil {
		snap.Belt = *d.Belt
	}
	if d.Starters != nil {
		snap.Starters = *d.Starters
	}
	dropReplacedIDs(&snap)
	for i := range d.Conversations {
		d.Conversations[i].ID = snap.Spaces[0].Tabs[0].Conversations[i].ID
		for j, id := range d.Conversations[i].RemoveItems {
			d.Conversations[i].RemoveItems[j] = replacedID(id)
		}
		for j, id := range d.Conversations[i].RemoveQuestions {
			d.Conversations[i].RemoveQuestions[j] = replacedID(id)
		}
	}
	for i := range d.Spaces {
		d.Spaces[i].ID = replacedID(d.Spaces[i].ID)
	}
	for i := range d.Tabs {
		d.Tabs[i].Space, d.Tabs[i].ID = replacedID(d.Tabs[i].Space), replacedID(d.Tabs[i].ID)
	}
}

func replacedID(id string) string {
	for _, r := range id {
		if r == '\uFFFD' {
			return ""
		}
	}
	return id
}
