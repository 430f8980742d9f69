#!/bin/bash
# An MCP server on stdio (JSON-RPC 2.0, one message a line) offering one
# tool, fetch: an HTTP(S) request whose status, content type and body (cut to
# max_bytes) come back as text. It needs bash, curl and jq.
set -u
tools='{"tools":[{"name":"fetch","description":"Fetch a URL over HTTP or HTTPS and return the status, content type and body as text, cut to max_bytes.",
"inputSchema":{"type":"object","required":["url"],"properties":{
"url":{"type":"string","description":"An http:// or https:// URL."},
"method":{"type":"string","description":"The HTTP method (default GET)."},
"headers":{"type":"object","additionalProperties":{"type":"string"},"description":"Request headers."},
"body":{"type":"string","description":"The request body."},
"max_bytes":{"type":"integer","minimum":1,"description":"The most bytes of the body returned (default 100000)."}}}}]}'

reply() { jq -cn --argjson id "$1" --argjson result "$2" '{jsonrpc: "2.0", id: $id, result: $result}'; }
fail() { jq -cn --argjson id "$1" --argjson code "$2" --arg message "$3" '{jsonrpc: "2.0", id: $id, error: {code: $code, message: $message}}'; }
text() { jq -cn --rawfile text "$1" --argjson error "$2" '{content: [{type: "text", text: $text}], isError: $error}'; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

call_fetch() { # id request
	local id=$1 req=$2 url method max code status
	url=$(jq -r '.params.arguments.url // ""' <<<"$req")
	method=$(jq -r '.params.arguments.method // "GET"' <<<"$req")
	max=$(jq -r '.params.arguments.max_bytes // 100000' <<<"$req")
	case $url in
	http://* | https://*) ;;
	*)
		printf 'url %s is not an http:// or https:// URL' "$url" >"$tmp/out"
		reply "$id" "$(text "$tmp/out" true)"
		return
		;;
	esac
	local args=(--silent --show-error --location --max-redirs 10 --max-time "${FETCH_TIMEOUT:-30}"
		--request "$method" --output "$tmp/body" --write-out '%{http_code} %{content_type}')
	while IFS= read -r h; do
		args+=(-H "$h")
	done < <(jq -r '.params.arguments.headers // {} | to_entries[] | "\(.key): \(.value)"' <<<"$req")
	if jq -e '.params.arguments | has("body")' <<<"$req" >/dev/null; then
		jq -j '.params.arguments.body' <<<"$req" >"$tmp/request"
		args+=(--data-binary "@$tmp/request")
	fi
	: >"$tmp/body"
	code=0
	status=$(curl "${args[@]}" -- "$url" 2>"$tmp/err") || code=$?
	if [ "$code" != 0 ]; then
		{ printf 'curl failed (exit %s): ' "$code"; cat "$tmp/err"; } >"$tmp/out"
		reply "$id" "$(text "$tmp/out" true)"
		return
	fi
	{
		printf 'HTTP %s\n\n' "$status"
		head -c "$max" "$tmp/body"
	} >"$tmp/out"
	local error=false
	if [ "${status%% *}" -ge 400 ]; then
		error=true
	fi
	reply "$id" "$(text "$tmp/out" "$error")"
}

while IFS= read -r line; do
	[ -n "$line" ] || continue
	if ! id=$(jq -ce 'if type == "object" then (.id // "none") else error("not an object") end' <<<"$line" 2>/dev/null); then
		fail null -32700 "parse error: a JSON-RPC message is one JSON object a line"
		continue
	fi
	if [ "$id" = '"none"' ]; then
		continue # a notification: no answer
	fi
	method=$(jq -r '.method // ""' <<<"$line")
	case $method in
	initialize)
		reply "$id" "$(jq -c '{protocolVersion: (.params.protocolVersion // "2024-11-05"), capabilities: {tools: {}},
			serverInfo: {name: "sbx-http-toolkit-fetch", version: "1.0.0"}}' <<<"$line")"
		;;
	ping) reply "$id" '{}' ;;
	tools/list) reply "$id" "$tools" ;;
	tools/call)
		name=$(jq -r '.params.name // ""' <<<"$line")
		if [ "$name" = fetch ]; then
			call_fetch "$id" "$line"
		else
			fail "$id" -32602 "unknown tool: $name"
		fi
		;;
	*) fail "$id" -32601 "method not found: $method" ;;
	esac
done
