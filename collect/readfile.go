package collect

import (
	"context"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/readlimit"
)

// fileReadTimeout bounds one read of a configuration or pseudo-file by the
// Slurm collector (slurm.conf, gres.conf, /proc/PID/environ, sysfs).
var fileReadTimeout = 5 * time.Second

// boundedReadFile reads path in time and size: a FIFO given as
// --slurm-conf, a 2 GB slurm.conf (read twice, 6.4 GB RSS before) or a
// hung file system is an error naming the file and the limit, and a path
// whose earlier read is still hung is refused at once (readlimit.File).
func boundedReadFile(path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fileReadTimeout)
	defer cancel()
	return readlimit.File(ctx, path, path, readlimit.SlurmConf)
}
