package apiv1

import "time"

// Amounts of credits are decimal strings: balances and charges with six
// decimals (micro-credits), prices with nine (nano-credits).

// Credits is an org's wallet: GET /api/v1/org/{org}/credits.
type Credits struct {
	Org         Named        `json:"org"`
	Balance     string       `json:"balance" doc:"Credits left, as a decimal string."`
	Settlements []Settlement `json:"settlements" doc:"The newest settlements first."`
}

// Settlement is one charge: what a sandbox owed for an interval and what the
// balance paid, per resource.
type Settlement struct {
	ID           int64     `json:"id"`
	SandboxID    string    `json:"sandbox_id" doc:"The sandbox's sbx UUID."`
	State        string    `json:"state" enum:"running,paused" doc:"The state the interval was priced at."`
	From         time.Time `json:"from"`
	To           time.Time `json:"to"`
	Credits      string    `json:"credits" doc:"What the balance paid: the sum of the resources."`
	Resources    Resources `json:"resources"`
	BalanceAfter string    `json:"balance_after"`
}

// Resources splits credits by what they paid for.
type Resources struct {
	CPU           string `json:"cpu"`
	Memory        string `json:"memory"`
	GPU           string `json:"gpu"`
	PausedStorage string `json:"paused_storage"`
	Snapshots     string `json:"snapshot_storage" doc:"What snapshots held paid (per GiB held); by_kind names it snapshot."`
	Volumes       string `json:"volume_storage" doc:"What volumes held paid (per GiB of their caps); by_kind names it volume."`
}

// Spending is the wallet expenditure breakdown of an org over a time range:
// GET /api/v1/org/{org}/credits/spending. Every breakdown sums to Total.
type Spending struct {
	Org        Named             `json:"org"`
	From       time.Time         `json:"from"`
	To         time.Time         `json:"to"`
	Total      string            `json:"total" doc:"Credits paid by settlements ending in (from, to]."`
	ByResource Resources         `json:"by_resource"`
	ByProject  []ProjectSpend    `json:"by_project"`
	ByKind     map[string]string `json:"by_kind"`
	ByProvider map[string]string `json:"by_provider"`
	Sandboxes  []SandboxSpend    `json:"sandboxes" doc:"Per sandbox, largest first."`
}

// ProjectSpend is what one project's sandboxes paid.
type ProjectSpend struct {
	Project Named  `json:"project"`
	Credits string `json:"credits"`
}

// SandboxSpend is what one sandbox paid.
type SandboxSpend struct {
	SandboxID string    `json:"sandboxID"`
	ID        string    `json:"id"`
	ProjectID string    `json:"projectID"`
	Kind      string    `json:"kind"`
	Provider  string    `json:"provider"`
	Credits   string    `json:"credits"`
	Resources Resources `json:"resources"`
}

// TopUpRequest is the body of POST /api/v1/admin/orgs/{org}/credits.
type TopUpRequest struct {
	Credits string `json:"credits" pattern:"^[0-9]+(\\.[0-9]{1,6})?$" doc:"Credits to add, a positive decimal string with at most six decimals."`
	Note    string `json:"note,omitempty"`
}

// Balance is an org's balance after a top-up.
type Balance struct {
	Org     Named  `json:"org"`
	Balance string `json:"balance"`
}

// Rate is a price per second from its effective time on.
type Rate struct {
	Provider         string    `json:"provider,omitempty" doc:"The provider whose sandboxes pay it; empty: any provider without a rate of its own for the resource."`
	Resource         string    `json:"resource" enum:"cpu,memory,gpu,paused_storage,snapshot_storage,volume_storage" doc:"cpu is per vCPU, memory and paused_storage per GiB of a sandbox's memory, snapshot_storage per GiB a snapshot holds, volume_storage per GiB of a volume's cap, gpu per card at gpu_share."`
	GPUType          string    `json:"gpu_type,omitempty" doc:"gpu only; empty: any type without its own rate."`
	GPUShare         int       `json:"gpu_share,omitempty" enum:"0,25,50,75,100" doc:"gpu only; 0: the price of a whole card, which shares without their own rate pay in proportion."`
	CreditsPerSecond string    `json:"credits_per_second" doc:"A decimal string with at most nine decimals."`
	EffectiveAt      time.Time `json:"effective_at"`
}

// RateList is the price table: GET /api/v1/rates.
type RateList struct {
	Items []Rate `json:"items" doc:"Every rate: the defaults (effective since always), then those set since, oldest first. At any time the newest effective rate of a resource applies: a provider's own, where it has one, to its sandboxes."`
}

// AddRateRequest is the body of POST /api/v1/admin/rates.
type AddRateRequest struct {
	Provider         string     `json:"provider,omitempty" maxLength:"64" doc:"The provider whose sandboxes pay it (cpu, memory, gpu, paused_storage); default any provider without a rate of its own."`
	Resource         string     `json:"resource" enum:"cpu,memory,gpu,paused_storage,snapshot_storage,volume_storage"`
	GPUType          string     `json:"gpu_type,omitempty"`
	GPUShare         int        `json:"gpu_share,omitempty" enum:"0,25,50,75,100"`
	CreditsPerSecond string     `json:"credits_per_second" pattern:"^[0-9]+(\\.[0-9]{1,9})?$"`
	EffectiveAt      *time.Time `json:"effective_at,omitempty" doc:"Default now; never in the past: time already settled keeps its prices."`
}
