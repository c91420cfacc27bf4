package owner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/errtrack"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// Config selects the sources of ownership and how often they are read.
type Config struct {
	// RefreshInterval is how often every source is read. Keep it at most the collection interval
	// of the receivers, so that an owner change shows in the next scrape after it.
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
	// InventoryInterval is how often the node's GPUs, RDMA devices and root ports are re-read
	// from sysfs (devices come and go with VFs being created and drivers loading).
	InventoryInterval time.Duration `mapstructure:"inventory_interval"`

	Kubernetes KubernetesConfig `mapstructure:"kubernetes"`
	Slurm      SlurmConfig      `mapstructure:"slurm"`
	Scontrol   ScontrolConfig   `mapstructure:"scontrol"`
	Process    ProcessConfig    `mapstructure:"process"`
	Static     StaticConfig     `mapstructure:"static"`
}

// DefaultConfig has every source off, with the defaults each needs when it is turned on.
func DefaultConfig() Config {
	return Config{
		RefreshInterval:   5 * time.Second,
		InventoryInterval: time.Minute,
		Kubernetes: KubernetesConfig{
			Socket:           DefaultPodResourcesSocket,
			Timeout:          2 * time.Second,
			GPUResources:     []string{"nvidia.com/gpu"},
			MaxDevicesPerPod: 256,
		},
		Process:  defaultProcessConfig(),
		Scontrol: defaultScontrolConfig(),
	}
}

// Validate checks the configuration; messages name the key.
func (c *Config) Validate() error {
	var errs []error
	if c.RefreshInterval <= 0 {
		errs = append(errs, fmt.Errorf("refresh_interval: must be positive, got %v", c.RefreshInterval))
	}
	if c.InventoryInterval < c.RefreshInterval {
		errs = append(errs, fmt.Errorf("inventory_interval: must be at least refresh_interval (%v), got %v", c.RefreshInterval, c.InventoryInterval))
	}
	if k := c.Kubernetes; k.Enabled {
		if k.Socket == "" {
			errs = append(errs, errors.New("kubernetes.socket: must be set, got \"\""))
		}
		if k.Timeout <= 0 {
			errs = append(errs, fmt.Errorf("kubernetes.timeout: must be positive, got %v", k.Timeout))
		}
		if k.MaxDevicesPerPod <= 0 {
			errs = append(errs, fmt.Errorf("kubernetes.max_devices_per_pod: must be positive, got %d", k.MaxDevicesPerPod))
		}
	}
	if c.Slurm.Enabled && c.Slurm.MappingDir == "" {
		errs = append(errs, errors.New("slurm.mapping_dir: must be set, got \"\""))
	}
	if c.Static.Enabled && c.Static.Path == "" {
		errs = append(errs, errors.New("static.path: must be set, got \"\""))
	}
	if c.Process.Enabled {
		errs = append(errs, c.Process.validate())
	}
	if c.Scontrol.Enabled {
		errs = append(errs, c.Scontrol.validate())
	}
	return errors.Join(errs...)
}

// source is one origin of claims. collect returns the claims, the problems of single entries
// (a file, a pod: logged once each, the rest counts) and an error when the source as a whole
// cannot be read (absent, unreachable).
type source interface {
	name() Source
	collect(ctx context.Context, inv *Inventory) (Claims, map[string]error, error)
	close() error
}

// Snapshot is the outcome of one refresh.
type Snapshot struct {
	// At is when the refresh finished.
	At          time.Time
	Assignments []Assignment
}

// Resolver reads the sources on its own ticker and keeps the latest Snapshot for scrapes.
type Resolver struct {
	cfg     Config
	root    string
	reader  *sysfs.Reader
	log     *errtrack.Log
	sources []source

	mu       sync.Mutex // one refresh at a time
	inv      *Inventory
	invAt    time.Time
	problems map[Source][]string // the problem keys of the last refresh, to say when they clear

	snap   atomic.Pointer[Snapshot]
	cancel context.CancelFunc
	done   chan struct{}
}

// NewResolver builds the enabled sources; nothing is read until Refresh or Start.
func NewResolver(cfg Config, root string, logger *zap.Logger) (*Resolver, error) {
	r := &Resolver{cfg: cfg, root: sysfs.HostRoot(root), reader: &sysfs.Reader{}, log: errtrack.NewLog(logger), problems: map[Source][]string{}}
	if cfg.Kubernetes.Enabled {
		k, err := newKubernetesSource(cfg.Kubernetes)
		if err != nil {
			return nil, err
		}
		r.sources = append(r.sources, k)
	}
	if cfg.Slurm.Enabled {
		r.sources = append(r.sources, &slurmSource{cfg: cfg.Slurm})
	}
	if cfg.Process.Enabled {
		r.sources = append(r.sources, newProcessSource(cfg.Process, r.root))
	}
	if cfg.Scontrol.Enabled {
		r.sources = append(r.sources, newScontrolSource(cfg.Scontrol))
	}
	if cfg.Static.Enabled {
		r.sources = append(r.sources, &staticSource{cfg: cfg.Static})
	}
	r.snap.Store(&Snapshot{})
	return r, nil
}

// Start refreshes once (each source bounded by its own deadline) and then every
// RefreshInterval on a goroutine of its own until Shutdown.
func (r *Resolver) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.done = make(chan struct{})
	r.Refresh(ctx)
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.cfg.RefreshInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.Refresh(ctx)
			}
		}
	}()
}

// Shutdown stops the ticker, waits for a refresh in flight and closes the sources.
func (r *Resolver) Shutdown() error {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
	var errs []error
	for _, s := range r.sources {
		errs = append(errs, s.close())
	}
	r.sources = nil // a second Shutdown closes nothing twice
	return errors.Join(errs...)
}

// Snapshot returns the latest refresh's outcome; it never reads anything.
func (r *Resolver) Snapshot() *Snapshot { return r.snap.Load() }

// Refresh reads the inventory (when it is due) and every source, and stores a new Snapshot. A
// source that cannot be read is said once when it fails and once when it recovers; while it
// fails, the devices it would own have no owner from it (unknown, not a stale guess).
func (r *Resolver) Refresh(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.inv == nil || now.Sub(r.invAt) >= r.cfg.InventoryInterval {
		inv, err := Discover(r.reader, r.root)
		if err != nil {
			r.log.Fail("inventory", "owner: part of the node's devices could not be read", err)
		} else {
			r.log.Recover("inventory", "owner: the node's devices are read again")
		}
		r.inv, r.invAt = inv, now
	}
	claims := Claims{}
	for _, s := range r.sources {
		c, problems, err := s.collect(ctx, r.inv)
		key := "source " + string(s.name())
		if err != nil {
			r.log.Fail(key, "owner: source unavailable; its devices have no owner from it until it recovers", err)
			continue
		}
		r.log.Recover(key, "owner: source available again")
		r.sayProblems(s.name(), problems)
		for addr, owners := range c {
			for _, o := range owners {
				claims.add(addr, o)
			}
		}
	}
	r.snap.Store(&Snapshot{At: time.Now(), Assignments: Assign(r.inv, claims)})
}

// sayProblems logs each new problem once, and that it cleared when it is gone.
func (r *Resolver) sayProblems(src Source, problems map[string]error) {
	keys := make([]string, 0, len(problems))
	for k, err := range problems {
		if errors.Is(err, errNoDevice) {
			// Not a fault: a device plugin whose ids name no device of ours (the RDMA shared
			// device plugin's slots, a VF without RDMA). Said once, at info.
			r.log.Once(k, zapcore.InfoLevel, "owner: device ids that give no per-device owner", zap.Error(err))
			continue
		}
		keys = append(keys, k)
		r.log.Fail(k, "owner: entry ignored, its device has no owner from "+string(src), err)
	}
	for _, k := range r.problems[src] {
		if _, ok := problems[k]; !ok {
			r.log.Recover(k, "owner: entry read again")
		}
	}
	slices.Sort(keys)
	r.problems[src] = keys
}
