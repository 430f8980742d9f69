package apiv1

import "time"

// Sessions: an agent's sessions on a workspace's runtimes, each with a
// transcript the client appends to. A session names its runtime, never a
// sandbox, so it outlives them.

// Session is an agent session on a runtime.
type Session struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	RuntimeID   string    `json:"runtime_id"`
	Title       string    `json:"title"`
	CreatedBy   string    `json:"created_by" doc:"The user ID of the member whose key made it; for a key that acts for no member (org-wide or a project's), the key's ID."`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at" doc:"When it was made or last appended to."`
}

// SessionList is a page of sessions, oldest first.
type SessionList struct {
	Items      []Session `json:"items"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// CreateSessionRequest is the body of POST …/ws/{workspace}/sessions.
type CreateSessionRequest struct {
	RuntimeID string `json:"runtime_id" doc:"A runtime of the workspace (a project's key: its project's)."`
	Title     string `json:"title,omitempty" doc:"At most 256 bytes."`
}

// SessionMessage is one message of a session's transcript.
type SessionMessage struct {
	Seq       int64     `json:"seq" doc:"Its place in the transcript, from 1, without gaps."`
	Role      string    `json:"role" enum:"user,assistant,system,tool"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"created_at"`
}

// SessionMessageList is a page of a transcript by seq, or the messages an
// append recorded.
type SessionMessageList struct {
	Items      []SessionMessage `json:"items"`
	NextCursor string           `json:"next_cursor,omitempty" doc:"The seq of the page's last message, when more follow: pass it as cursor."`
}

// NewSessionMessage is a message to append.
type NewSessionMessage struct {
	Role    string `json:"role" enum:"user,assistant,system,tool"`
	Content string `json:"content" doc:"At most 262144 bytes, no NUL."`
}

// AppendMessagesRequest is the body of POST …/sessions/{session_id}/messages.
type AppendMessagesRequest struct {
	Messages []NewSessionMessage `json:"messages" doc:"1 to 100 messages, appended in order, all or none."`
}
