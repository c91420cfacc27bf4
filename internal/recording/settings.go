package recording

import (
	"errors"
	"path/filepath"
)

// Settings is the `recording` block every receiver's configuration embeds:
//
//	recording:
//	  write: /var/tmp/node1-rnic.jsonl.gz   # record the raw readings of every scrape here
//	  replay: /recordings/node1-rnic.jsonl  # read this recording instead of the hardware
//	  loop: true                            # start the replay over at its end
type Settings struct {
	// Write is a file to record the receiver's raw readings to (gzip when it ends in .gz).
	Write string `mapstructure:"write"`
	// Replay is a recording to read instead of the hardware.
	Replay string `mapstructure:"replay"`
	// Loop starts the replay over at its end instead of stopping.
	Loop bool `mapstructure:"loop"`
}

// Validate checks the settings.
func (s Settings) Validate() error {
	var errs []error
	if s.Write != "" && s.Replay != "" {
		errs = append(errs, errors.New("recording: write and replay cannot both be set"))
	}
	if s.Loop && s.Replay == "" {
		errs = append(errs, errors.New("recording: loop needs replay"))
	}
	if s.Write != "" && filepath.Base(s.Write) == "." {
		errs = append(errs, errors.New("recording: write must name a file"))
	}
	return errors.Join(errs...)
}
