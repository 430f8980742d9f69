package agent

import (
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/sbxdev/sbx/apiv1"
)

// envd's /files: a file's contents down (GET) and up (POST), through the
// agent's own file machinery (serveFile, writeStream), for the user
// ?username names. ?signature and ?signature_expiration, which serve has
// checked, are ignored, and so are X-Metadata-* headers (envd keeps them
// as extended attributes; the agent does not). Errors are envd's:
// {"code":<status>,"message"}.

// uploaded describes a file an upload wrote.
type uploaded struct {
	Name string `json:"name"`
	Type string `json:"type"` // file
	Path string `json:"path"`
}

// envdDownload sends the bytes of the file ?path names (serveFile).
func (a *Agent) envdDownload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	acct, err := a.envdAccount(q.Get("username"))
	path := ""
	if err == nil {
		path, err = a.envdPath(q.Get("path"), acct)
	}
	if err == nil {
		err = a.serveFile(w, r, path)
	}
	if err != nil {
		writeFilesError(w, err)
	}
}

// envdUpload writes files, and answers what it wrote. An
// application/octet-stream body (gzip-encoded or not) goes to ?path; each
// part named file of a multipart/form-data body goes to ?path when given,
// else to its filename, a path (not Part.FileName, which keeps only its
// last element). Two parts for one path are a 400, and a bad part leaves
// those before it written. Files are written as the user (writeStream):
// their parents are made, and what is new belongs to the user.
func (a *Agent) envdUpload(w http.ResponseWriter, r *http.Request) {
	written, err := a.envdWriteFiles(r)
	if err != nil {
		writeFilesError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, written)
}

func (a *Agent) envdWriteFiles(r *http.Request) ([]uploaded, error) {
	q := r.URL.Query()
	acct, err := a.envdAccount(q.Get("username"))
	if err != nil {
		return nil, err
	}
	write := func(path string, body io.Reader) (uploaded, error) {
		info, err := writeStream(path, body, 0, acct)
		return uploaded{Name: info.Name, Type: "file", Path: info.Path}, err
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/octet-stream" {
		if q.Get("path") == "" {
			return nil, invalid("an application/octet-stream upload needs ?path")
		}
		path, err := a.envdPath(q.Get("path"), acct)
		if err != nil {
			return nil, err
		}
		body, err := decoded(r)
		if err != nil {
			return nil, err
		}
		file, err := write(path, body)
		if err != nil {
			return nil, err
		}
		return []uploaded{file}, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, invalid("the body must be multipart/form-data or application/octet-stream, not %s", quote(r.Header.Get("Content-Type")))
	}
	var files []uploaded
	seen := map[string]bool{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, invalid("reading the multipart body: %s", short(err.Error()))
		}
		if part.FormName() != "file" {
			continue
		}
		name := q.Get("path")
		if name == "" {
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			name = params["filename"]
		}
		if name == "" {
			return nil, invalid("a part has no filename, and the query no path")
		}
		path, err := a.envdPath(name, acct)
		if err != nil {
			return nil, err
		}
		if seen[path] {
			return nil, invalid("%s is uploaded twice", quote(path))
		}
		seen[path] = true
		file, err := write(path, part)
		if err != nil {
			return nil, err
		}
		files = append(files, file)
	}
	if len(files) == 0 {
		return nil, invalid("the multipart body has no part named file")
	}
	return files, nil
}

// decoded is the request's body, ungzipped when its Content-Encoding is
// gzip.
func decoded(r *http.Request) (io.Reader, error) {
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
		return r.Body, nil
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, invalid("the body is not gzip: %v", err)
		}
		return zr, nil
	default:
		return nil, invalid("Content-Encoding %s is not gzip", quote(enc))
	}
}

// writeFilesError answers err as envd's /files does: with its status, and
// {"code":<status>,"message"}.
func writeFilesError(w http.ResponseWriter, err error) {
	status, msg := http.StatusInternalServerError, err.Error()
	if e, ok := errors.AsType[*apiv1.Error](err); ok {
		status, msg = e.Code, e.Detail
	} else if e, ok := errors.AsType[*connectError](err); ok {
		status, msg = connectStatus[e.Code], e.Message
	}
	writeJSON(w, status, struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{status, msg})
}
