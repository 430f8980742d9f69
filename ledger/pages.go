package ledger

import (
	"time"

	"github.com/sbxdev/sbx"
)

// Page is sbx.Page.
type Page = sbx.Page

// limitOf is a page's limit, its default filled in.
func limitOf(p Page) int {
	if p.Limit <= 0 {
		return 100
	}
	return p.Limit
}

// after is the condition that starts the page after its cursor, ordered by
// the columns at (a time in micros) and id; "1 = 1" on the first page.
func after(p Page, at, id string) (string, []any, error) {
	if p.Cursor == "" {
		return "1 = 1", nil, nil
	}
	t, key, err := decodeCursor(p.Cursor)
	if err != nil {
		return "", nil, err
	}
	return "(" + at + " > ? OR (" + at + " = ? AND " + id + " > ?))", []any{t, t, key}, nil
}

// page cuts rows, read with one more than the page's limit, to the page and
// returns the cursor of the next one ("" on the last).
func page[T any](rows []T, p Page, key func(T) (time.Time, string)) ([]T, string) {
	if len(rows) <= limitOf(p) {
		return rows, ""
	}
	rows = rows[:limitOf(p)]
	at, id := key(rows[len(rows)-1])
	return rows, encodeCursor(at.UnixMicro(), id)
}
