package config

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/supervision/fault"
)

// ClusterFlags make `singularity run` a member of a family that spans
// processes (docs/cluster.md#members). With
// no etcd endpoint the run is a single process and none of the others
// is read. The shared state root is SINGULARITY_STATE_DIR.
type ClusterFlags struct {
	Etcd      string `name:"cluster-etcd" env:"SINGULARITY_CLUSTER_ETCD" help:"Comma list of etcd client URLs; set, run joins a family across processes (docs/cluster.md)."`
	Family    string `name:"cluster-family" env:"SINGULARITY_CLUSTER_FAMILY" default:"family" help:"The family's name in etcd: one family a name per etcd."`
	Member    string `name:"cluster-member" env:"SINGULARITY_CLUSTER_MEMBER" help:"This member's name, unique among the family's live members (default: the host name)."`
	Bind      string `name:"cluster-bind" env:"SINGULARITY_CLUSTER_BIND" default:"127.0.0.1:0" help:"Address this member listens on for the other members (host:port; port 0 picks a free one)."`
	Lease     string `name:"cluster-lease-secs" env:"SINGULARITY_CLUSTER_LEASE_SECS" default:"3" help:"The member's etcd lease, whole seconds: a member silent this long loses its beings."`
	Placement string `name:"cluster-placement" env:"SINGULARITY_CLUSTER_PLACEMENT" default:"being" help:"How the family's beings are placed on members: being (each being on its own, spread over the members) or family (the whole family on one member at a time)."`
	Compact   string `name:"cluster-compact-secs" env:"SINGULARITY_CLUSTER_COMPACT_SECS" default:"300" help:"How often the holder compacts etcd's history, keeping one such period of it, whole seconds; 0: never (etcd's own auto-compaction must then keep it short)."`
	Socket    string `name:"cluster-control-socket" env:"SINGULARITY_CLUSTER_CONTROL_SOCKET" default:"true" help:"Whether this member listens on its control socket in the state root, for fund and say on its machine (true or false)."`
}

// Cluster is the validated cluster configuration; Enabled is false for a
// single process.
type Cluster struct {
	Enabled   bool
	Endpoints []string
	Family    string
	Member    string
	Bind      string
	Lease     time.Duration
	// Compact is how often the holder compacts etcd's history (0:
	// never).
	Compact time.Duration
	// Spread places each being on its own (--cluster-placement being,
	// the default) instead of the whole family on one member
	// (--cluster-placement family).
	Spread bool
	// NoSocket says the member listens on no control socket
	// (--cluster-control-socket false; unset or empty: it listens).
	NoSocket bool
}

// LoadCluster validates the cluster flags. hostname names the member
// when no name is given.
func LoadCluster(f ClusterFlags, hostname func() (string, error)) (Cluster, error) {
	if strings.TrimSpace(f.Etcd) == "" {
		return Cluster{}, nil
	}
	c := Cluster{Enabled: true, Family: f.Family, Member: f.Member, Bind: f.Bind}
	for _, e := range strings.Split(f.Etcd, ",") {
		e = strings.TrimSpace(e)
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Cluster{}, fault.Errorf(fault.ClassConfiguration, "SINGULARITY_CLUSTER_ETCD %q is not a list of http(s) URLs", f.Etcd)
		}
		c.Endpoints = append(c.Endpoints, e)
	}
	if !identity.Valid(c.Family) {
		return Cluster{}, fault.Errorf(fault.ClassConfiguration, "SINGULARITY_CLUSTER_FAMILY %q is not 1 to 128 ASCII letters, digits or any of \"-_.:\"", c.Family)
	}
	if c.Member == "" {
		name, err := hostname()
		if err != nil {
			return Cluster{}, fault.Errorf(fault.ClassConfiguration, "SINGULARITY_CLUSTER_MEMBER is unset and the host name cannot be read: %w", err)
		}
		c.Member = name
	}
	if !identity.Valid(c.Member) {
		return Cluster{}, fault.Errorf(fault.ClassConfiguration, "SINGULARITY_CLUSTER_MEMBER %q is not 1 to 128 ASCII letters, digits or any of \"-_.:\"", c.Member)
	}
	if _, port, err := net.SplitHostPort(c.Bind); err != nil || port == "" {
		return Cluster{}, fault.Errorf(fault.ClassConfiguration, "SINGULARITY_CLUSTER_BIND %q is not host:port", c.Bind)
	}
	secs, err := strconv.Atoi(f.Lease)
	if err != nil || secs < 1 || secs > 3600 {
		return Cluster{}, fault.Errorf(fault.ClassConfiguration, "SINGULARITY_CLUSTER_LEASE_SECS %q is not a whole number of seconds from 1 to 3600", f.Lease)
	}
	c.Lease = time.Duration(secs) * time.Second
	secs, err = strconv.Atoi(f.Compact)
	if err != nil || secs < 0 || secs > 86400 {
		return Cluster{}, fault.Errorf(fault.ClassConfiguration, "SINGULARITY_CLUSTER_COMPACT_SECS %q is not a whole number of seconds from 0 to 86400", f.Compact)
	}
	c.Compact = time.Duration(secs) * time.Second
	if f.Socket != "" {
		on, err := strconv.ParseBool(f.Socket)
		if err != nil {
			return Cluster{}, fault.Errorf(fault.ClassConfiguration, "SINGULARITY_CLUSTER_CONTROL_SOCKET %q is neither true nor false", f.Socket)
		}
		c.NoSocket = !on
	}
	switch f.Placement {
	case "", "being":
		c.Spread = true
	case "family":
	default:
		return Cluster{}, fault.Errorf(fault.ClassConfiguration, "SINGULARITY_CLUSTER_PLACEMENT %q is neither family nor being", f.Placement)
	}
	return c, nil
}
