/* test_waiting.c - rd_waiting over real TCP connections on 127.0.0.1: every peer turned away
 * gets its line on stderr, even one whose handshake was still finishing when another
 * connection won and the set ended. (Seen once in streams.sh under load: a forged stripe was
 * answered REJECT, the real stripes completed an instant later, and its line was lost.) */
#include "check.h"

#include "transport/rd_select.h"
#include "transport/rd_tcp.h"
#include "transport/rd_waiting.h"
#include "util/rd_error.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

/* One byte decides: 'g' wins at once; 'b' is answered "R" (as a REJECT goes out) and then
 * turned away, 300 ms later: the winner ends the set in between. 'B' is turned away at once. */
static int handshake(struct rd_transport *tp, void *arg, void *result)
{
    (void)arg;
    (void)result;
    char c = 0;
    int fd = rd_tcp_fd(tp);
    if (read(fd, &c, 1) != 1)
        return rd_fail(RD_ESTREAM, "connection from %s: no byte", tp->peer);
    if (c == 'g')
        return RD_OK;
    if (write(fd, "R", 1) != 1)
        return rd_fail(RD_ESTREAM, "connection from %s: cannot answer", tp->peer);
    if (c == 'b')
        usleep(300 * 1000);
    return rd_fail(RD_EAUTH, "connection from %s is not one of ours (%c)", tp->peer, c);
}

static int port_of(struct rd_listener *lis)
{
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    int fd = lis->lis[0]->ops->listen_fd(lis->lis[0]);
    return getsockname(fd, (struct sockaddr *)&a, &al) ? -1 : ntohs(a.sin_port);
}

static int dial(int port, char what)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) || write(fd, &what, 1) != 1) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

struct peers {
    int port;
    const char *order;   /* one connection per byte, each after the one before was answered */
    int fds[4];
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int done;
};

static void *peers_main(void *arg)
{
    struct peers *p = arg;
    for (int i = 0; p->order[i]; i++) {
        char c = p->order[i], r;
        p->fds[i] = dial(p->port, c);
        if (c != 'g' && p->fds[i] >= 0 && read(p->fds[i], &r, 1) != 1)
            break;
    }
    pthread_mutex_lock(&p->lock);   /* hold them open until the set is over */
    while (!p->done)
        pthread_cond_wait(&p->cv, &p->lock);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; p->order[i]; i++)
        if (p->fds[i] >= 0)
            close(p->fds[i]);
    return NULL;
}

/* stderr into a file while the set runs; its lines come back in buf */
static int err_to(FILE **f)
{
    fflush(stderr);
    int saved = dup(2);
    *f = tmpfile();
    if (saved < 0 || !*f)
        return -1;
    dup2(fileno(*f), 2);
    return saved;
}

static size_t err_back(int saved, FILE *f, char *buf, size_t cap)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

static unsigned lines_with(const char *buf, const char *what)
{
    unsigned n = 0;
    for (const char *s = buf; (s = strstr(s, what)); s++)
        n++;
    return n;
}

/* order: the peers' bytes; want_b / want_B: the lines expected for each kind */
static void run(const char *order, unsigned want_b, unsigned want_B)
{
    struct rd_reach reach = { .port = "0", .bind = "127.0.0.1", .timeout_s = -1, .transport = RD_T_TCP };
    struct rd_listener lis;
    CHECK_OR(rd_listen_any(&reach, &lis) == RD_OK, return);
    struct peers p = { .port = port_of(&lis), .order = order, .fds = { -1, -1, -1, -1 },
                       .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
    struct rd_waiting_cfg cfg = { .handshake = handshake, .deadline_ms = 5000 };
    struct rd_waiting *w = rd_waiting_new(&cfg);
    FILE *f;
    int saved = err_to(&f);
    pthread_t th;
    CHECK_OR(w && saved >= 0 && pthread_create(&th, NULL, peers_main, &p) == 0, return);
    struct rd_transport *won = NULL;
    int rc = rd_waiting_next(w, &lis, -1, 5000, &won, NULL);
    rd_waiting_free(w);   /* the 'b' handshake is still in its pause: stopped */
    char buf[4096];
    err_back(saved, f, buf, sizeof buf);
    pthread_mutex_lock(&p.lock);
    p.done = 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.lock);
    pthread_join(th, NULL);
    CHECK_EQ_I(rc, RD_OK);
    CHECK(won != NULL);
    if (won)
        won->ops->close(won);
    rd_listener_close(&lis);
    CHECK_EQ_U(lines_with(buf, "is not one of ours (b)"), want_b);
    CHECK_EQ_U(lines_with(buf, "is not one of ours (B)"), want_B);
    CHECK_EQ_U(lines_with(buf, "\n"), want_b + want_B);
    if (check_case_failures)
        fprintf(stdout, "    stderr was: %s\n", buf);
}

/* turned away, its REJECT out, when the winner ends the set: its line still comes */
static void t_line_of_a_peer_turned_away_as_the_set_ends(void)
{
    run("bg", 1, 0);
}

/* the plain case: a peer turned away before the winner, and one being turned away after */
static void t_lines_of_peers_turned_away_before_and_during(void)
{
    run("Bbg", 1, 1);
}

int main(void)
{
    RUN(t_line_of_a_peer_turned_away_as_the_set_ends);
    RUN(t_lines_of_peers_turned_away_before_and_during);
    return check_summary();
}
