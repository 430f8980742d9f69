package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// Following a sandbox's log over HTTP (the Memory provider, whose own log
// gains a line at each pause and resume): the stream starts with the log so
// far, passes on lines added after it started, provider's and timeline's
// alike, and ends, after the kill's own lines, when the sandbox is killed.
func TestFollowLogsOverHTTP(t *testing.T) {
	s := newStack(t, stackOpts{})
	s.call(s.operator, "POST", "/api/v1/admin/orgs/default/credits", apiv1.TopUpRequest{Credits: "100"}, 200, nil)
	sb := s.create(s.operator, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+"/api/v1/sandboxes/"+sb.SandboxID+"/logs/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.operator)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != apiv1.NDJSON {
		t.Fatalf("follow: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan apiv1.LogLine)
	ended := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var l apiv1.LogLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				ended <- err
				return
			}
			lines <- l
		}
		close(lines)
		ended <- sc.Err()
	}()
	// next reads lines until one matches, and answers those it read.
	next := func(source, prefix string) []apiv1.LogLine {
		t.Helper()
		var read []apiv1.LogLine
		for l := range lines {
			read = append(read, l)
			if l.Source == source && strings.HasPrefix(l.Line, prefix) {
				return read
			}
		}
		t.Fatalf("the stream ended before a %s line %q; it had %+v", source, prefix, read)
		return nil
	}
	next("stdout", "booted template base") // the log so far: the provider's first line
	next("sbx", "ready")

	// Lines added after the stream started: the provider's and the timeline's.
	s.call(s.operator, "POST", "/api/v1/sandboxes/"+sb.SandboxID+"/pause", map[string]any{}, 200, nil)
	next("stdout", "paused")
	s.call(s.operator, "POST", "/api/v1/sandboxes/"+sb.SandboxID+"/resume", map[string]any{}, 200, nil)
	next("stdout", "resumed")

	// The kill ends the stream, after the kill's own lines.
	s.call(s.operator, "DELETE", "/api/v1/sandboxes/"+sb.SandboxID, nil, 200, nil)
	next("sbx", "killed")
	for l := range lines {
		t.Errorf("a line after the kill: %+v", l)
	}
	if err := <-ended; err != nil {
		t.Errorf("the stream ended with %v, want its clean end", err)
	}

	// A page of the log holds the same lines; an unknown sandbox is a 404.
	var page apiv1.LogPage
	s.call(s.operator, "GET", "/api/v1/sandboxes/"+sb.SandboxID+"/logs", nil, 200, &page)
	if last := page.Items[len(page.Items)-1]; last.Source != "sbx" || !strings.HasPrefix(last.Line, "killed") {
		t.Errorf("the log's last line is %+v", last)
	}
	s.fail(s.operator, "GET", "/api/v1/sandboxes/nope/logs/stream", nil, 404, "not_found", "")
	s.fail(s.operator, "GET", "/api/v1/sandboxes/"+sb.SandboxID+"/logs/stream?follow=1", nil, 400, "invalid", "follow")
}
