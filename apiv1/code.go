package apiv1

// CreateCodeContextRequest is the body of POST …/code/contexts.
type CreateCodeContextRequest struct {
	Language string            `json:"language,omitempty" enum:"python,bash,javascript" doc:"python (a Jupyter kernel: ipykernel), bash, or javascript (node, in a template that has it: one vm context, whose var declarations and globals persist); default python."`
	Cwd      string            `json:"cwd,omitempty" doc:"Its working directory; default /workspace."`
	Env      map[string]string `json:"env,omitempty" doc:"Added to its environment."`
	User     string            `json:"user,omitempty" doc:"The user it runs as; default the sandbox's default user."`
}

// CodeContext is a stateful interpreter in a sandbox: variables, imports
// and the working directory persist from one execution to the next.
type CodeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
	User     string `json:"user"`
	Default  bool   `json:"default,omitempty" doc:"The language's default context, which an execution that names none uses."`
	State    string `json:"state" enum:"new,idle,busy,dead" doc:"new: its interpreter starts with its first execution; dead: it died (restart it)."`
	Error    string `json:"error,omitempty" doc:"Why a dead context died."`
}

// CodeContextList is a sandbox's code contexts.
type CodeContextList struct {
	Items []CodeContext `json:"items"`
}

// ExecuteCodeRequest is the body of POST …/code/execute.
type ExecuteCodeRequest struct {
	Code      string `json:"code" doc:"At most 1 MiB."`
	ContextID string `json:"contextId,omitempty" doc:"The context to run in; default the language's default context, made on first use."`
	Language  string `json:"language,omitempty" enum:"python,bash,javascript" doc:"Without contextId: the default context of this language (default python)."`
	Timeout   int64  `json:"timeout,omitempty" minimum:"0" doc:"Seconds after which the execution is interrupted (the context lives on); 0: none."`
}

// CodeEvent is one line of an execution's NDJSON stream: output as it
// comes, then the end.
type CodeEvent struct {
	Type           string         `json:"type" enum:"stdout,stderr,result,error,end"`
	Text           string         `json:"text,omitempty" doc:"stdout, stderr: the text."`
	Data           map[string]any `json:"data,omitempty" doc:"result: a MIME bundle, every type the interpreter gave (text/plain, text/html, image/png and image/svg+xml as base64 or text, application/json, text/markdown, text/latex)."`
	IsMainResult   bool           `json:"isMainResult,omitempty" doc:"result: the value of the last expression (else something displayed, such as a figure)."`
	Name           string         `json:"name,omitempty" doc:"error: its name, e.g. ZeroDivisionError."`
	Value          string         `json:"value,omitempty" doc:"error: its message."`
	Traceback      []string       `json:"traceback,omitempty" doc:"error: the traceback's lines (with terminal colours, as Jupyter gives them)."`
	ContextID      string         `json:"contextId,omitempty" doc:"end: the context it ran in."`
	Status         string         `json:"status,omitempty" enum:"ok,error,interrupted,timeout" doc:"end: how it ended."`
	ExecutionCount int            `json:"executionCount,omitempty" doc:"end: the context's count of executions."`
	DurationMs     int64          `json:"durationMs,omitempty" doc:"end: how long it ran, in milliseconds."`
}
