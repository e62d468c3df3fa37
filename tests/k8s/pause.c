/* The sandbox's pause process: sleeps until SIGTERM or SIGINT, reaps children (it is a pod's PID 1). */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
    signal(SIGTERM, quit);
    signal(SIGINT, quit);
    signal(SIGCHLD, reap);
    for (;;) pause();
}
