package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// orgColumns are the columns scanOrg reads, each after prefix.
func orgColumns(prefix string) string {
	cols := ""
	for i, c := range []string{"id", "name", "kyc_status", "plan_name", "plan_max_sandboxes", "plan_max_milli_cpu",
		"plan_max_memory_mb", "plan_max_gpu_percent", "plan_max_members", "plan_max_timeout_s", "created_at", "plan_max_disk_mb"} {
		if i > 0 {
			cols += ", "
		}
		cols += prefix + c
	}
	return cols
}

// scanOrg returns the scan destinations of orgColumns for o, and a function
// that finishes o once they are scanned.
func scanOrg(o *sbx.Org) ([]any, func()) {
	var kyc string
	var timeoutS, created int64
	dest := []any{&o.ID, &o.Name, &kyc, &o.Plan.Name, &o.Plan.MaxSandboxes, &o.Plan.MaxMilliCPU,
		&o.Plan.MaxMemoryMB, &o.Plan.MaxGPUPercent, &o.Plan.MaxMembers, &timeoutS, &created, &o.Plan.MaxDiskMB}
	return dest, func() {
		o.KYCStatus = sbx.KYCStatus(kyc)
		o.Plan.MaxTimeout = time.Duration(timeoutS) * time.Second
		o.CreatedAt = time.UnixMicro(created).UTC()
	}
}

// namePattern is what org, workspace and project names look like.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// checkName refuses a name that is not a short lowercase slug, or one that
// could be mistaken for an ID where paths take either.
func checkName(what, name string) error {
	if !namePattern.MatchString(name) {
		return sbx.Invalid("name", "%s name %q must be 1-63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", what, name)
	}
	if _, err := uuid.Parse(name); err == nil {
		return sbx.Invalid("name", "%s name %q must not be a UUID: paths take IDs and names alike", what, name)
	}
	return nil
}

// checkPlan refuses negative limits.
func checkPlan(p sbx.Plan) error {
	for _, l := range []struct {
		field string
		v     int64
	}{
		{"max_sandboxes", int64(p.MaxSandboxes)}, {"max_vcpu", p.MaxMilliCPU}, {"max_memory_mb", p.MaxMemoryMB},
		{"max_gpu_percent", int64(p.MaxGPUPercent)}, {"max_members_per_workspace", int64(p.MaxMembers)}, {"max_timeout", int64(p.MaxTimeout)},
		{"max_disk_mb", p.MaxDiskMB},
	} {
		if l.v < 0 {
			return sbx.Invalid(l.field, "%s must be 0 (no limit) or more", l.field)
		}
	}
	return nil
}

// Orgs returns a page of every org, oldest first.
func (s *Store) Orgs(ctx context.Context, p Page) ([]sbx.Org, string, error) {
	where, args, err := after(p, "created_at", "id")
	if err != nil {
		return nil, "", err
	}
	rows, err := s.read(ctx).query(ctx, `SELECT `+orgColumns("")+` FROM orgs WHERE `+where+` ORDER BY created_at, id LIMIT ?`, append(args, limitOf(p)+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []sbx.Org
	for rows.Next() {
		var o sbx.Org
		dest, finish := scanOrg(&o)
		if err := rows.Scan(dest...); err != nil {
			return nil, "", err
		}
		finish()
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := page(out, p, func(o sbx.Org) (time.Time, string) { return o.CreatedAt, o.ID })
	return out, next, nil
}

// GetOrg finds an org by its ID or its name.
func (s *Store) GetOrg(ctx context.Context, ref string) (sbx.Org, error) {
	return getOrg(ctx, s.read(ctx), ref, false)
}

func getOrg(ctx context.Context, q db, ref string, lock bool) (sbx.Org, error) {
	suffix := q.forUpdateIf(lock)
	var o sbx.Org
	dest, finish := scanOrg(&o)
	err := q.row(ctx, `SELECT `+orgColumns("")+` FROM orgs WHERE id = ? OR name = ?`+suffix, ref, ref).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return sbx.Org{}, sbx.Errorf(sbx.ENotFound, "org %s not found", ref)
	}
	if err != nil {
		return sbx.Org{}, err
	}
	finish()
	return o, nil
}

// SetPlan replaces the plan of the org ref (ID or name). Compute already
// running stays; the new limits apply from the next admission.
func (s *Store) SetPlan(ctx context.Context, ref string, p sbx.Plan) (sbx.Org, error) {
	if err := checkPlan(p); err != nil {
		return sbx.Org{}, err
	}
	var o sbx.Org
	err := s.write(ctx, func(tx db) error {
		var err error
		if o, err = getOrg(ctx, tx, ref, true); err != nil {
			return err
		}
		o.Plan = p
		_, err = tx.exec(ctx, `UPDATE orgs SET plan_name = ?, plan_max_sandboxes = ?, plan_max_milli_cpu = ?, plan_max_memory_mb = ?,
			plan_max_gpu_percent = ?, plan_max_members = ?, plan_max_timeout_s = ?, plan_max_disk_mb = ? WHERE id = ?`,
			p.Name, p.MaxSandboxes, p.MaxMilliCPU, p.MaxMemoryMB, p.MaxGPUPercent, p.MaxMembers, int64(p.MaxTimeout/time.Second), p.MaxDiskMB, o.ID)
		return err
	})
	return o, err
}

// SetOrgKYC records the verification state of the org ref (ID or name),
// decided at at. With ifLater (a report from outside, such as a webhook), a
// state decided before the one recorded (a late or replayed report) changes
// nothing: applied is false and the org is answered as it is.
func (s *Store) SetOrgKYC(ctx context.Context, ref string, status sbx.KYCStatus, at time.Time, ifLater bool) (o sbx.Org, applied bool, err error) {
	if !status.Valid() {
		return sbx.Org{}, false, sbx.Invalid("status", "status %q must be unverified, pending or verified", status)
	}
	err = s.write(ctx, func(tx db) error {
		if o, err = getOrg(ctx, tx, ref, true); err != nil {
			return err
		}
		if applied, err = setKYC(ctx, tx, "orgs", o.ID, status, at, ifLater); applied {
			o.KYCStatus = status
		}
		return err
	})
	return o, applied, err
}

// setKYC writes a verification state to the row id of table; with ifLater,
// unless one decided later is recorded.
func setKYC(ctx context.Context, tx db, table, id string, status sbx.KYCStatus, at time.Time, ifLater bool) (bool, error) {
	res, err := tx.exec(ctx, fmt.Sprintf(`UPDATE %s SET kyc_status = ?, kyc_updated_at = ?
		WHERE id = ? AND (? OR kyc_updated_at IS NULL OR kyc_updated_at <= ?)`, table), string(status), at.UnixMicro(), id, !ifLater, at.UnixMicro())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
