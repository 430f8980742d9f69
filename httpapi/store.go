package httpapi

import (
	"github.com/sbxdev/sbx/billing"
	"github.com/sbxdev/sbx/capability"
	"github.com/sbxdev/sbx/events"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/observability"
	"github.com/sbxdev/sbx/preview"
	"github.com/sbxdev/sbx/secrets"
	"github.com/sbxdev/sbx/sessions"
	"github.com/sbxdev/sbx/sshauth"
	"github.com/sbxdev/sbx/tenancy"
	"github.com/sbxdev/sbx/webhooks"
)

// Store is what the services under the API read and write of the ledger:
// the union of their own Store interfaces, which *ledger.Store satisfies.
// The handlers themselves call no store method.
type Store interface {
	tenancy.Store          // what the tenancy service reads and writes
	billing.Store          // what the wallet reads and writes
	observability.Store    // what the summary reads
	secrets.Store          // what the secrets service reads and writes
	sessions.Store         // what the sessions service reads and writes
	sshauth.Store          // what the SSH credentials service reads and writes
	capability.Store       // what the capability service functions read and write
	lifecycle.RuntimeStore // what the runtimes read and write
	lifecycle.MemberStore  // what the member limit reads and writes
	preview.Store          // what preview traffic and links read and write
	events.Store           // what the event log reads
	webhooks.Store         // what the webhooks service reads and writes
}
