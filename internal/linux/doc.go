// Package linux is the group of the system primitives both sides use: the
// socket path walk (sockpath), peer credentials (peercred), private sockets
// (privsock), the service manager and journald (systemd), a file's owner
// on every platform (fileowner), a process's /proc/PID/stat (procstat),
// and atomic writes (atomicfile). They import nothing of the module above
// them.
package linux
