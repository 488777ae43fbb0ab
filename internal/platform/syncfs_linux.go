package platform

import "golang.org/x/sys/unix"

// syncOne flushes the file system holding dir (syncfs(2)).
func syncOne(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}
