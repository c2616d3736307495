package fence_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/wisent/singularity/internal/fence"
	"github.com/wisent/singularity/test/etcdtest"
)

// A being's steps fenced by its lock, against a real etcd on loopback
// (this package's TestMain skips the example where no etcd is
// installed). A member's session takes the being's lock; its committer
// writes the being's commit record under the lock's token, one step at a
// time. Once the lock is gone (let go here; an expired lease or a
// deleted key does the same), the next commit is refused with ErrFenced
// and changes nothing: the next holder's commits are the ones that count,
// and the refusal is final.
func Example() {
	srv, err := etcdtest.Launch()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := func() *fence.Session {
		s, err := fence.Open(fence.Config{Endpoints: srv.Endpoints(), Family: "example", TTL: 2 * time.Second})
		if err != nil {
			log.Fatal(err)
		}
		return s
	}
	a, b := open(), open()
	defer a.Close()
	defer b.Close()

	// Member a holds ada and commits the step ending with seq 3.
	lock, err := a.Lock(ctx, "ada")
	if err != nil {
		log.Fatal(err)
	}
	steps := fence.NewCommitter(lock, nil)
	fmt.Println("commit up to seq 3:", steps.Fence(3))
	token, seq, err := b.Committed(ctx, "ada")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("record: seq", seq, "under a's token:", token == lock.Token())

	// a loses the lock; b takes it, with a larger token, and commits.
	if err := lock.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	next, err := b.Lock(ctx, "ada")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("b's token is larger:", next.Token() > lock.Token())
	fmt.Println("b commits up to seq 4:", fence.NewCommitter(next, nil).Fence(4))

	// a's next commit is fenced and changes nothing; so is every later one.
	err = steps.Fence(4)
	fmt.Println("a commits up to seq 4: fenced:", errors.Is(err, fence.ErrFenced))
	fmt.Println("a again: fenced:", errors.Is(steps.Fence(5), fence.ErrFenced))
	token, seq, err = b.Committed(ctx, "ada")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("record: seq", seq, "under b's token:", token == next.Token())
	// Output:
	// commit up to seq 3: <nil>
	// record: seq 3 under a's token: true
	// b's token is larger: true
	// b commits up to seq 4: <nil>
	// a commits up to seq 4: fenced: true
	// a again: fenced: true
	// record: seq 4 under b's token: true
}
