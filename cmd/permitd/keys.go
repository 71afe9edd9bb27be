package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/permitd/permitd/api/apikey"
)

// keysConfig is the keys command's configuration.
type keysConfig struct {
	quotaConfig
	Plan string
	ID   string
}

func runKeys(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(e.stderr, "usage: permitd keys create --plan NAME | list | revoke --id ID  [--keys-file F | --redis-url U]")
		fmt.Fprintln(e.stderr, "plans:", strings.Join(apikey.PlanNames(), ", "))
		return errUsage
	}
	action := args[0]
	var cfg keysConfig
	fs := newFlagSet("keys "+action, e)
	cfg.quotaConfig.bind(fs)
	switch action {
	case "create":
		fs.StringVar(&cfg.Plan, "plan", "", "plan of the new key: "+strings.Join(apikey.PlanNames(), ", "))
	case "revoke":
		fs.StringVar(&cfg.ID, "id", "", "id of the key to revoke (the part after pmk_, as `keys list` shows it)")
	case "list":
	default:
		return fmt.Errorf("keys: unknown action %q (create, list, revoke)", action)
	}
	if err := fs.parse(args[1:]); err != nil {
		return err
	}
	if err := cfg.quotaConfig.validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	store, rdb, err := openKeyStore(cfg.quotaConfig)
	if err != nil {
		return err
	}
	if rdb != nil {
		defer rdb.Close()
	}
	where := "file " + cfg.KeysFile
	if rdb != nil {
		where = "Redis " + redactURL(cfg.RedisURL)
	}

	switch action {
	case "create":
		if cfg.Plan == "" {
			return fmt.Errorf("keys create: --plan is required (%s)", strings.Join(apikey.PlanNames(), ", "))
		}
		key, rec, err := apikey.Issue(ctx, store, cfg.Plan, time.Now())
		if err != nil {
			return err
		}
		// The key goes to stdout alone, once; only its hash was stored.
		fmt.Fprintln(e.stdout, key)
		fmt.Fprintf(e.stderr, "created key id %s on plan %s in %s; store the key now: it cannot be shown again\n", rec.ID, rec.Plan, where)
		return nil
	case "revoke":
		if cfg.ID == "" {
			return errors.New("keys revoke: --id is required")
		}
		if err := store.Revoke(ctx, cfg.ID); err != nil {
			return fmt.Errorf("keys revoke %s: %w", cfg.ID, err)
		}
		fmt.Fprintf(e.stderr, "revoked key id %s in %s (replicas stop accepting it within their key cache TTL)\n", cfg.ID, where)
		return nil
	default: // list
		recs, err := store.List(ctx)
		if err != nil {
			return err
		}
		if rdb == nil {
			// A path typed wrong listed no key and said nothing.
			if _, err := os.Stat(cfg.KeysFile); errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(e.stderr, "no keys file at %s: no key was issued there (keys create writes it)\n", cfg.KeysFile)
			}
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPLAN\tCREATED")
		for _, r := range recs {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Plan, r.Created.UTC().Format(time.RFC3339))
		}
		return tw.Flush()
	}
}
