package ledger

import "time"

// Page selects one page of a tenancy list (orgs, workspaces, projects,
// members, keys), oldest first.
type Page struct {
	Limit  int    // 1..1000; 0 means 100
	Cursor string // from a previous page's next cursor
}

func (p Page) limit() int {
	if p.Limit <= 0 {
		return 100
	}
	return p.Limit
}

// after is the condition that starts the page after its cursor, ordered by
// the columns at (a time in micros) and id; "1 = 1" on the first page.
func (p Page) after(at, id string) (string, []any, error) {
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
	if len(rows) <= p.limit() {
		return rows, ""
	}
	rows = rows[:p.limit()]
	at, id := key(rows[len(rows)-1])
	return rows, encodeCursor(at.UnixMicro(), id)
}
