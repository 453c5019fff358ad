/*
 * latency_probe: the controller's side of bench/bench_node_latency.py, in C on rcl.
 *
 *   latency_probe --rate HZ --seconds S --joints j1,j2,... [--out-topic /joint_states]
 *                 [--in-topic /soa_dynamics/feedforward_state] [--warmup-timeout 30]
 *                 [--latencies FILE]
 *
 * Publishes stamped sensor_msgs/JointState at a fixed rate and times the echoes
 * the node sends back (it copies the stamp of the joint state it answered).
 * A real 1 kHz controller (ros2_control) is C++ with its own real-time thread;
 * a Python probe adds executor wake-ups and GIL contention that are then
 * wrongly charged to the node.  This probe has neither: one thread publishes on
 * an absolute clock, another sleeps in rcl_wait and takes every echo at once.
 * (rclcpp is not available from the wheels, rcl is, hence C.)
 *
 * stdout: one JSON object (published, received, missed, achieved_publish_rate_hz,
 * latency_ms {median, p99, max, mean}); stderr: a one-line summary and errors.
 * --latencies FILE: every answered state's latency [ms] too, one a line in the
 * order the answers arrived (the bench pools runs with them).
 * Exit codes: 0 measured, 1 usage, rcl or --latencies file error, 2 no echo within the warm-up
 * timeout, 128+signal when interrupted by SIGINT/SIGTERM (no JSON then).
 *
 * Build: bench/latency_probe.py (build_probe) knows the include and library paths.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rcutils/allocator.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <rosidl_runtime_c/string_functions.h>
#include <sensor_msgs/msg/joint_state.h>

#define NS_PER_S 1000000000LL

/* ------------------------------------------------------------------ options */

typedef struct {
  double rate_hz;
  double seconds;
  double warmup_timeout_s;
  const char * out_topic;
  const char * in_topic;
  const char * latencies_path;   /* NULL: no per-state file */
  char ** joints;
  size_t joint_count;
} options_t;

/* ------------------------------------------------------------------ shared state */

/* One echo as the receiver saw it; matching against the sent stamps is done
 * after the run, so the receiver does nothing but take and timestamp. */
typedef struct {
  int64_t stamp_ns;
  int64_t received_ns;
} echo_t;

typedef struct {
  pthread_mutex_t lock;   /* guards echoes/count/capacity (the warm-up discards them) */
  echo_t * echoes;
  size_t count;
  size_t capacity;
  atomic_long total;      /* every echo since start: the warm-up polls it without the lock */
} echo_log_t;

static volatile sig_atomic_t g_signal = 0;   /* set by SIGINT/SIGTERM, polled by every loop */
static atomic_bool g_stop_receiver = false;
static atomic_bool g_thread_failed = false;  /* an rcl call failed in a worker thread */

typedef struct {
  options_t opt;
  rcl_allocator_t allocator;
  rcl_init_options_t init_options;
  rcl_context_t context;
  rcl_node_t node;
  rcl_publisher_t publisher;
  rcl_subscription_t subscription;
  rcl_wait_set_t wait_set;
  sensor_msgs__msg__JointState out_msg;
  bool out_msg_ready;
  echo_log_t log;
  /* the timed run (written by the publisher thread, read after it is joined) */
  int64_t * sent_ns;
  size_t planned;
  size_t published;
  double achieved_rate_hz;
} probe_t;

/* ------------------------------------------------------------------ helpers */

static int64_t now_ns(clockid_t clock)
{
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static bool check(rcl_ret_t ret, const char * what)
{
  if (ret == RCL_RET_OK) {
    return true;
  }
  /* rcutils keeps the error string per thread: report it in the thread that failed. */
  fprintf(stderr, "latency_probe: %s failed (rcl return %d): %s\n", what, (int)ret,
          rcl_get_error_string().str);
  rcl_reset_error();
  return false;
}

/* Sleep until an absolute CLOCK_MONOTONIC time; false if a signal asked us to
 * stop.  A signal may be delivered to another thread and then does not
 * interrupt this sleep, so long sleeps are cut into 50 ms slices that poll it. */
static bool sleep_until(int64_t target_ns)
{
  while (!g_signal) {
    int64_t slice = now_ns(CLOCK_MONOTONIC) + 50000000LL;
    int64_t until = slice < target_ns ? slice : target_ns;
    struct timespec ts = {.tv_sec = until / NS_PER_S, .tv_nsec = until % NS_PER_S};
    int err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    if (err != 0 && err != EINTR) {
      fprintf(stderr, "latency_probe: clock_nanosleep: %s\n", strerror(err));
      return false;
    }
    if (err == 0 && until == target_ns) {
      return true;
    }
  }
  return false;
}

static bool sleep_for(double seconds)
{
  return sleep_until(now_ns(CLOCK_MONOTONIC) + (int64_t)(seconds * 1e9));
}

static void on_signal(int signo)
{
  g_signal = signo;
}

static int compare_i64(const void * a, const void * b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int compare_double(const void * a, const void * b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* numpy.percentile's default ("linear"): position q/100 * (n-1) in the sorted
 * data, interpolated between its two neighbours; so p50 equals numpy.median. */
static double percentile(const double * sorted, size_t n, double q)
{
  double pos = q / 100.0 * (double)(n - 1);
  size_t lo = (size_t)floor(pos);
  size_t hi = lo + 1 < n ? lo + 1 : n - 1;
  return sorted[lo] + (pos - (double)lo) * (sorted[hi] - sorted[lo]);
}

/* ------------------------------------------------------------------ publishing */

static bool publish_stamped(probe_t * p, int64_t * stamp_out)
{
  int64_t stamp = now_ns(CLOCK_REALTIME);
  p->out_msg.header.stamp.sec = (int32_t)(stamp / NS_PER_S);
  p->out_msg.header.stamp.nanosec = (uint32_t)(stamp % NS_PER_S);
  if (!check(rcl_publish(&p->publisher, &p->out_msg, NULL), "rcl_publish")) {
    return false;
  }
  if (stamp_out) {
    *stamp_out = stamp;
  }
  return true;
}

/* Absolute schedule: target i is start + i * period computed from i, so a late
 * wake-up delays one message, never the ones after it (no drift).  A publisher
 * that fell behind publishes the overdue messages back to back: the count of
 * published states stays rate x seconds, which is what "missed" is out of. */
static void * publisher_thread(void * arg)
{
  probe_t * p = arg;
  double period_ns = 1e9 / p->opt.rate_hz;
  int64_t start = now_ns(CLOCK_MONOTONIC) + 1000000LL, last = 0;
  for (size_t i = 0; i < p->planned; ++i) {
    if (!sleep_until(start + (int64_t)llround((double)i * period_ns))) {
      break;
    }
    if (!publish_stamped(p, &p->sent_ns[p->published])) {
      atomic_store(&g_thread_failed, true);
      break;
    }
    last = now_ns(CLOCK_MONOTONIC);
    p->published++;
  }
  /* On time, the last of N messages goes out N-1 periods after the start: so
   * N / (last - start + one period) is exactly the rate then, and a late first
   * wake-up cannot inflate it (unlike counting from the first publish). */
  p->achieved_rate_hz = p->published
    ? (double)p->published * 1e9 / ((double)(last - start) + period_ns) : 0.0;
  return NULL;
}

/* ------------------------------------------------------------------ receiving */

static bool log_echo(echo_log_t * log, int64_t stamp_ns, int64_t received_ns)
{
  pthread_mutex_lock(&log->lock);
  if (log->count == log->capacity) {
    size_t capacity = log->capacity ? 2 * log->capacity : 1024;
    echo_t * grown = realloc(log->echoes, capacity * sizeof(*grown));
    if (!grown) {
      pthread_mutex_unlock(&log->lock);
      fprintf(stderr, "latency_probe: out of memory for echoes\n");
      return false;
    }
    log->echoes = grown;
    log->capacity = capacity;
  }
  log->echoes[log->count++] = (echo_t){stamp_ns, received_ns};
  pthread_mutex_unlock(&log->lock);
  atomic_fetch_add(&log->total, 1);
  return true;
}

/* Blocked in rcl_wait on this subscription alone, so a wake-up means echoes;
 * the 100 ms timeout only bounds how long the end of the run goes unnoticed.
 * Every wake-up drains the queue: one take per wake-up would let a burst
 * (the node catching up) queue behind the wait and inflate the latency. */
static void * receiver_thread(void * arg)
{
  probe_t * p = arg;
  sensor_msgs__msg__JointState msg;
  if (!sensor_msgs__msg__JointState__init(&msg)) {
    fprintf(stderr, "latency_probe: JointState init failed\n");
    atomic_store(&g_thread_failed, true);
    return NULL;
  }
  while (!atomic_load(&g_stop_receiver) && !g_signal) {
    if (!check(rcl_wait_set_clear(&p->wait_set), "rcl_wait_set_clear") ||
        !check(rcl_wait_set_add_subscription(&p->wait_set, &p->subscription, NULL),
               "rcl_wait_set_add_subscription")) {
      atomic_store(&g_thread_failed, true);
      break;
    }
    rcl_ret_t ret = rcl_wait(&p->wait_set, RCL_MS_TO_NS(100));
    if (ret == RCL_RET_TIMEOUT) {
      continue;
    }
    if (!check(ret, "rcl_wait")) {
      atomic_store(&g_thread_failed, true);
      break;
    }
    for (;;) {
      ret = rcl_take(&p->subscription, &msg, NULL, NULL);
      if (ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
        break;   /* queue drained (or a spurious wake-up): not an error */
      }
      int64_t received = now_ns(CLOCK_REALTIME);
      if (!check(ret, "rcl_take")) {
        atomic_store(&g_thread_failed, true);
        goto done;
      }
      int64_t stamp = (int64_t)msg.header.stamp.sec * NS_PER_S + msg.header.stamp.nanosec;
      if (!log_echo(&p->log, stamp, received)) {
        atomic_store(&g_thread_failed, true);
        goto done;
      }
    }
  }
done:
  sensor_msgs__msg__JointState__fini(&msg);
  return NULL;
}

/* ------------------------------------------------------------------ set-up and tear-down */

static bool make_joint_state(probe_t * p)
{
  sensor_msgs__msg__JointState * m = &p->out_msg;
  size_t n = p->opt.joint_count;
  if (!sensor_msgs__msg__JointState__init(m)) {
    return false;
  }
  p->out_msg_ready = true;
  if (!rosidl_runtime_c__String__Sequence__init(&m->name, n) ||
      !rosidl_runtime_c__double__Sequence__init(&m->position, n) ||
      !rosidl_runtime_c__double__Sequence__init(&m->velocity, n)) {
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!rosidl_runtime_c__String__assign(&m->name.data[i], p->opt.joints[i])) {
      return false;
    }
    m->position.data[i] = 0.3;
    m->velocity.data[i] = 0.0;
  }
  return true;
}

static bool setup(probe_t * p)
{
  p->allocator = rcl_get_default_allocator();
  p->init_options = rcl_get_zero_initialized_init_options();
  p->context = rcl_get_zero_initialized_context();
  p->node = rcl_get_zero_initialized_node();
  p->publisher = rcl_get_zero_initialized_publisher();
  p->subscription = rcl_get_zero_initialized_subscription();
  p->wait_set = rcl_get_zero_initialized_wait_set();

  if (!check(rcl_init_options_init(&p->init_options, p->allocator), "rcl_init_options_init")) {
    return false;
  }
  /* No arguments: ROS_DOMAIN_ID and ROS_AUTOMATIC_DISCOVERY_RANGE come from the
   * environment, as for the node and rclpy, so both ends meet. */
  if (!check(rcl_init(0, NULL, &p->init_options, &p->context), "rcl_init")) {
    return false;
  }

  rcl_node_options_t node_options = rcl_node_get_default_options();
  node_options.enable_rosout = false;   /* nothing to log; one DDS writer less */
  char name[64];
  snprintf(name, sizeof name, "latency_probe_%ld", (long)getpid());
  bool ok = check(rcl_node_init(&p->node, name, "", &p->context, &node_options), "rcl_node_init");
  if (!check(rcl_node_options_fini(&node_options), "rcl_node_options_fini") || !ok) {
    return false;
  }

  const rosidl_message_type_support_t * type =
    ROSIDL_GET_MSG_TYPE_SUPPORT(sensor_msgs, msg, JointState);

  /* What rclpy's create_publisher(JointState, topic, 10) gives: reliable, keep last 10. */
  rcl_publisher_options_t pub_options = rcl_publisher_get_default_options();
  pub_options.qos = rmw_qos_profile_default;
  pub_options.qos.history = RMW_QOS_POLICY_HISTORY_KEEP_LAST;
  pub_options.qos.depth = 10;
  pub_options.qos.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
  if (!check(rcl_publisher_init(&p->publisher, &p->node, type, p->opt.out_topic, &pub_options),
             "rcl_publisher_init")) {
    return false;
  }

  /* Depth 100 so a burst of echoes is queued, not overwritten, while we are
   * off timestamping the previous ones: an overwritten echo would count as missed. */
  rcl_subscription_options_t sub_options = rcl_subscription_get_default_options();
  sub_options.qos = rmw_qos_profile_default;
  sub_options.qos.history = RMW_QOS_POLICY_HISTORY_KEEP_LAST;
  sub_options.qos.depth = 100;
  sub_options.qos.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
  ok = check(rcl_subscription_init(&p->subscription, &p->node, type, p->opt.in_topic,
                                   &sub_options), "rcl_subscription_init");
  if (!check(rcl_subscription_options_fini(&sub_options), "rcl_subscription_options_fini") || !ok) {
    return false;
  }

  if (!check(rcl_wait_set_init(&p->wait_set, 1, 0, 0, 0, 0, 0, &p->context, p->allocator),
             "rcl_wait_set_init")) {
    return false;
  }
  if (!make_joint_state(p)) {
    fprintf(stderr, "latency_probe: could not build the JointState message\n");
    return false;
  }
  return true;
}

/* Reverse order of setup; every step is safe on a zero-initialized object, so
 * this also cleans up after a setup that failed half-way. */
static bool teardown(probe_t * p)
{
  bool ok = true;
  if (p->out_msg_ready) {
    sensor_msgs__msg__JointState__fini(&p->out_msg);
    p->out_msg_ready = false;
  }
  if (p->wait_set.impl) {
    ok &= check(rcl_wait_set_fini(&p->wait_set), "rcl_wait_set_fini");
  }
  if (rcl_subscription_is_valid(&p->subscription)) {
    ok &= check(rcl_subscription_fini(&p->subscription, &p->node), "rcl_subscription_fini");
  }
  rcl_reset_error();   /* *_is_valid sets an error message when it answers false */
  if (rcl_publisher_is_valid(&p->publisher)) {
    ok &= check(rcl_publisher_fini(&p->publisher, &p->node), "rcl_publisher_fini");
  }
  rcl_reset_error();
  if (rcl_node_is_valid(&p->node)) {
    ok &= check(rcl_node_fini(&p->node), "rcl_node_fini");
  }
  rcl_reset_error();
  if (rcl_context_is_valid(&p->context)) {
    ok &= check(rcl_shutdown(&p->context), "rcl_shutdown");
  }
  if (p->context.impl) {
    ok &= check(rcl_context_fini(&p->context), "rcl_context_fini");
  }
  if (p->init_options.impl) {
    ok &= check(rcl_init_options_fini(&p->init_options), "rcl_init_options_fini");
  }
  return ok;
}

/* ------------------------------------------------------------------ command line */

static void usage(FILE * out)
{
  fprintf(out,
          "usage: latency_probe --rate HZ --seconds S --joints j1,j2,...\n"
          "                     [--out-topic /joint_states]\n"
          "                     [--in-topic /soa_dynamics/feedforward_state]\n"
          "                     [--warmup-timeout 30] [--latencies FILE]\n");
}

static bool parse_positive(const char * text, double * value, const char * what)
{
  char * end;
  errno = 0;
  *value = strtod(text, &end);
  if (errno || end == text || *end || !(*value > 0) || !isfinite(*value)) {
    fprintf(stderr, "latency_probe: %s must be a positive number, got '%s'\n", what, text);
    return false;
  }
  return true;
}

static bool split_joints(const char * text, options_t * opt)
{
  char * copy = strdup(text);
  if (!copy) {
    return false;
  }
  size_t n = 1;
  for (const char * c = text; *c; ++c) {
    n += *c == ',';
  }
  opt->joints = calloc(n, sizeof(char *));
  if (!opt->joints) {
    free(copy);
    return false;
  }
  char * save = NULL;
  for (char * tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    opt->joints[opt->joint_count++] = strdup(tok);
  }
  free(copy);
  return opt->joint_count > 0;
}

static bool parse_args(int argc, char ** argv, options_t * opt)
{
  static const struct option longopts[] = {
    {"rate", required_argument, NULL, 'r'},
    {"seconds", required_argument, NULL, 's'},
    {"joints", required_argument, NULL, 'j'},
    {"out-topic", required_argument, NULL, 'o'},
    {"in-topic", required_argument, NULL, 'i'},
    {"warmup-timeout", required_argument, NULL, 'w'},
    {"latencies", required_argument, NULL, 'l'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  *opt = (options_t){.warmup_timeout_s = 30.0, .out_topic = "/joint_states",
                     .in_topic = "/soa_dynamics/feedforward_state"};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
      case 'r': if (!parse_positive(optarg, &opt->rate_hz, "--rate")) return false; break;
      case 's': if (!parse_positive(optarg, &opt->seconds, "--seconds")) return false; break;
      case 'w':
        if (!parse_positive(optarg, &opt->warmup_timeout_s, "--warmup-timeout")) return false;
        break;
      case 'j':
        if (!split_joints(optarg, opt)) {
          fprintf(stderr, "latency_probe: --joints needs at least one name\n");
          return false;
        }
        break;
      case 'o': opt->out_topic = optarg; break;
      case 'i': opt->in_topic = optarg; break;
      case 'l': opt->latencies_path = optarg; break;
      case 'h': usage(stdout); exit(0);
      default: usage(stderr); return false;
    }
  }
  if (optind != argc || opt->rate_hz <= 0 || opt->seconds <= 0 || opt->joint_count == 0) {
    usage(stderr);
    return false;
  }
  return true;
}

/* ------------------------------------------------------------------ the measurement */

/* Publish every 10 ms until the first echo: the node is up and discovery is
 * done both ways.  Then let the warm-up's echoes arrive and forget them. */
static int warm_up(probe_t * p)
{
  int64_t deadline = now_ns(CLOCK_MONOTONIC) + (int64_t)(p->opt.warmup_timeout_s * 1e9);
  while (atomic_load(&p->log.total) == 0) {
    if (g_signal) {
      return 128 + g_signal;
    }
    if (atomic_load(&g_thread_failed)) {
      return 1;
    }
    if (now_ns(CLOCK_MONOTONIC) > deadline) {
      fprintf(stderr, "latency_probe: no echo on %s within %g s of publishing on %s "
              "(is the node running, with the same ROS_DOMAIN_ID and "
              "ROS_AUTOMATIC_DISCOVERY_RANGE?)\n",
              p->opt.in_topic, p->opt.warmup_timeout_s, p->opt.out_topic);
      return 2;
    }
    if (!publish_stamped(p, NULL)) {
      return 1;
    }
    sleep_for(0.01);
  }
  if (!sleep_for(0.2)) {
    return 128 + g_signal;
  }
  pthread_mutex_lock(&p->log.lock);
  p->log.count = 0;
  /* Room for the whole run now, so the receiver does not realloc during it. */
  size_t want = p->planned + p->planned / 10 + 1024;
  if (want > p->log.capacity) {
    echo_t * grown = realloc(p->log.echoes, want * sizeof(*grown));
    if (grown) {
      p->log.echoes = grown;
      p->log.capacity = want;
    }
  }
  pthread_mutex_unlock(&p->log.lock);
  return 0;
}

/* The answered states' latencies [ms], one a line; false (said on stderr) if unwritable. */
static bool write_latencies(const char * path, const double * latency_ms, size_t count)
{
  FILE * out = fopen(path, "w");
  bool written = out != NULL;
  for (size_t k = 0; written && k < count; ++k) {
    written = fprintf(out, "%.6f\n", latency_ms[k]) > 0;
  }
  if (out != NULL && fclose(out) != 0) {
    written = false;
  }
  if (!written) {
    fprintf(stderr, "latency_probe: cannot write %s: %s\n", path, strerror(errno));
  }
  return written;
}

static bool report(probe_t * p)
{
  size_t n = p->published;
  qsort(p->sent_ns, n, sizeof(int64_t), compare_i64);
  unsigned char * answered = calloc(n ? n : 1, 1);
  double * latency_ms = malloc((p->log.count ? p->log.count : 1) * sizeof(double));
  size_t received = 0, strays = 0;
  for (size_t k = 0; k < p->log.count; ++k) {
    const echo_t * e = &p->log.echoes[k];
    int64_t * hit = bsearch(&e->stamp_ns, p->sent_ns, n, sizeof(int64_t), compare_i64);
    /* An echo of a warm-up message (late) or a duplicate is not an answer to this run. */
    if (!hit || answered[hit - p->sent_ns]) {
      strays++;
      continue;
    }
    answered[hit - p->sent_ns] = 1;
    latency_ms[received++] = (double)(e->received_ns - e->stamp_ns) * 1e-6;
  }
  size_t missed = n - received;
  if (p->opt.latencies_path && !write_latencies(p->opt.latencies_path, latency_ms, received)) {
    free(answered);
    free(latency_ms);
    return false;
  }
  printf("{\"published\": %zu, \"received\": %zu, \"missed\": %zu, "
         "\"achieved_publish_rate_hz\": %.3f, \"latency_ms\": ",
         n, received, missed, p->achieved_rate_hz);
  if (received) {
    qsort(latency_ms, received, sizeof(double), compare_double);
    double sum = 0;
    for (size_t k = 0; k < received; ++k) {
      sum += latency_ms[k];
    }
    double median = percentile(latency_ms, received, 50), p99 = percentile(latency_ms, received, 99);
    double max = latency_ms[received - 1], mean = sum / (double)received;
    printf("{\"median\": %.6f, \"p99\": %.6f, \"max\": %.6f, \"mean\": %.6f}}\n",
           median, p99, max, mean);
    fprintf(stderr, "latency_probe: published %zu at %.1f Hz, received %zu, missed %zu "
            "(%.2f%%); latency median %.3f ms, p99 %.3f ms, max %.3f ms%s\n",
            n, p->achieved_rate_hz, received, missed, n ? 100.0 * missed / n : 0.0,
            median, p99, max, strays ? " (stray echoes ignored)" : "");
  } else {
    printf("null}\n");
    fprintf(stderr, "latency_probe: published %zu at %.1f Hz, received none\n",
            n, p->achieved_rate_hz);
  }
  fflush(stdout);
  free(answered);
  free(latency_ms);
  return true;
}

int main(int argc, char ** argv)
{
  static probe_t probe;   /* static: zeroed, and large arrays stay off the stack */
  probe_t * p = &probe;
  if (!parse_args(argc, argv, &p->opt)) {
    return 1;
  }
  p->planned = (size_t)llround(p->opt.rate_hz * p->opt.seconds);
  p->sent_ns = malloc((p->planned ? p->planned : 1) * sizeof(int64_t));
  pthread_mutex_init(&p->log.lock, NULL);
  if (!p->sent_ns) {
    fprintf(stderr, "latency_probe: out of memory\n");
    return 1;
  }

  /* Installed before any thread starts so all threads share it; no SA_RESTART
   * is needed: every loop polls g_signal at least every 100 ms. */
  struct sigaction action = {.sa_handler = on_signal};
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);

  int status = 1;
  pthread_t receiver, publisher;
  bool receiver_started = false;
  if (!setup(p)) {
    goto out;
  }
  if (pthread_create(&receiver, NULL, receiver_thread, p) != 0) {
    fprintf(stderr, "latency_probe: cannot start the receiver thread\n");
    goto out;
  }
  receiver_started = true;

  status = warm_up(p);
  if (status != 0) {
    goto out;
  }
  if (pthread_create(&publisher, NULL, publisher_thread, p) != 0) {
    fprintf(stderr, "latency_probe: cannot start the publisher thread\n");
    status = 1;
    goto out;
  }
  pthread_join(publisher, NULL);
  /* Echoes still in flight at the last publish count as answered, not missed. */
  sleep_for(0.5);
  if (g_signal) {
    status = 128 + g_signal;
  } else if (atomic_load(&g_thread_failed)) {
    status = 1;
  }

out:
  atomic_store(&g_stop_receiver, true);
  if (receiver_started) {
    pthread_join(receiver, NULL);
  }
  if (status == 0 && atomic_load(&g_thread_failed)) {
    status = 1;
  }
  if (status == 0) {
    /* the receiver is joined: the log is ours, no lock needed */
    status = report(p) ? 0 : 1;
  } else if (status > 128) {
    fprintf(stderr, "latency_probe: interrupted by signal %d, no result\n", status - 128);
  }
  if (!teardown(p)) {
    status = status ? status : 1;
  }
  free(p->sent_ns);
  free(p->log.echoes);
  for (size_t i = 0; i < p->opt.joint_count; ++i) {
    free(p->opt.joints[i]);
  }
  free(p->opt.joints);
  pthread_mutex_destroy(&p->log.lock);
  return status;
}
