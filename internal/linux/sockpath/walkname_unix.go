//go:build unix

package sockpath

import "golang.org/x/sys/unix"

// walkByName is the walk of T2 by name: lstat on each part from "/" down,
// never following a link, each part judged by the rules of T3. It returns
// the ID of the socket it ends at. It holds nothing it checked, so a part
// swapped between two lstat calls is not caught: on Linux it serves only
// Identify, which connects to nothing (a kept connection is used only when
// the socket the walk ends at is the one the connection was made to,
// through the held walk of DialID); on other systems it is the only walk.
func walkByName(path string, uid int, passed func(part string)) (ID, error) {
	if err := CheckForm(path); err != nil {
		return ID{}, err
	}
	if path == "/" {
		return ID{}, &Error{Path: path, Code: CodeNotSocket, Part: path, Reason: "the path is not a socket"}
	}
	folder := folderOf(path)
	var st unix.Stat_t
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		part := path[:i]
		if i == 0 {
			part = "/"
		}
		if err := lstat(part, &st); err != nil {
			return ID{}, statError(path, part, err)
		}
		if e := judge(path, folder, part, &st, uid); e != nil {
			return ID{}, e
		}
		if passed != nil {
			passed(part)
		}
	}
	sec, nsec := st.Ctim.Unix()
	return ID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Ctime: sec*1e9 + nsec}, nil
}

func lstat(path string, st *unix.Stat_t) error {
	for {
		// lstat can be interrupted on network and FUSE file systems.
		if err := unix.Lstat(path, st); err != unix.EINTR {
			return err
		}
	}
}
