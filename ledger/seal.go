package ledger

import (
	"context"
	"fmt"

	"github.com/sbxdev/sbx/internal/seal"
)

// Sealed values are bound to their rows (seal.Box's context): one copied to
// another row, or a row moved to another org, member or name, no longer
// opens.

// tokenContext binds a sandbox's sealed access token to the sandbox.
func tokenContext(sandboxID, orgID string) string {
	return "sandbox access token\x00" + sandboxID + "\x00" + orgID
}

// nextTokenContext binds a warm pool member's sealed next token to it.
func nextTokenContext(sandboxID, orgID string) string {
	return "sandbox next token\x00" + sandboxID + "\x00" + orgID
}

// secretContext binds a secret's sealed value to its scope and name.
func secretContext(orgID, userID, name string) string {
	return "secret\x00" + orgID + "\x00" + userID + "\x00" + name
}

// resealVersion is the migration whose step is resealBound.
const resealVersion = 8

// resealBound seals again, each bound to its row, the values sealed before
// contexts existed: migration 0008's step.
func resealBound(ctx context.Context, d db, box *seal.Box) error {
	err := reseal(ctx, d, box, "sandboxes", "access_token", `SELECT id, access_token, org_id FROM sandboxes`,
		func(f []string) string { return tokenContext(f[0], f[2]) })
	if err != nil {
		return err
	}
	return reseal(ctx, d, box, "secrets", "value", `SELECT id, value, org_id, coalesce(user_id, ''), name FROM secrets`,
		func(f []string) string { return secretContext(f[2], f[3], f[4]) })
}

// reseal reseals column of table, a batch at a time: query selects a row's
// id, its sealed value and what its context needs.
func reseal(ctx context.Context, d db, box *seal.Box, table, column, query string, context func(fields []string) string) error {
	for {
		rows, err := d.query(ctx, query+` WHERE `+column+` <> '' AND `+column+` NOT LIKE '2.%' LIMIT 500`)
		if err != nil {
			return err
		}
		var batch [][]string
		for rows.Next() {
			cols, _ := rows.Columns()
			f := make([]string, len(cols))
			ptrs := make([]any, len(cols))
			for i := range f {
				ptrs[i] = &f[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			batch = append(batch, f)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(batch) == 0 {
			return err
		}
		for _, f := range batch {
			plain, err := box.OpenUnbound(f[1])
			if err != nil {
				return fmt.Errorf("%s %s: %w", table, f[0], err)
			}
			if _, err := d.exec(ctx, `UPDATE `+table+` SET `+column+` = ? WHERE id = ?`, box.Seal(plain, context(f)), f[0]); err != nil {
				return err
			}
		}
	}
}
