"""Which fio options a test may pass: an allow-list, matched exactly.

fio runs as root here. Options that run programs, write or read files outside the work
directory, change the machine (I/O scheduler, cgroups, user) or turn fio into a server are
refused, and so is anything not on the list: fio matches option-name prefixes
(`directo` is `directory`), so a deny-list alone lets a shortened name through.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


JOB = _words("""
name description rw readwrite rw_sequencer rwmixread rwmixwrite
bs blocksize bsrange blocksize_range bssplit bs_unaligned blocksize_unaligned ba blockalign
size filesize io_size io_limit offset offset_align offset_increment number_ios fill_device
nrfiles openfiles file_service_type filename filename_format unique_filename
numjobs thread iodepth iodepth_batch iodepth_batch_submit iodepth_batch_complete
iodepth_batch_complete_min iodepth_batch_complete_max iodepth_low io_submit_mode ioengine
direct buffered atomic invalidate pre_read fadvise_hint fallocate create_on_open create_only
create_serialize create_fsync allow_file_create unlink unlink_each_loop file_append overwrite
sync fsync fdatasync sync_file_range end_fsync fsync_on_close write_barrier
loops runtime timeout time_based ramp_time startdelay stonewall wait_for new_group exitall
exitall_on_error exit_what
random_distribution random_generator randrepeat allrandrepeat randseed norandommap
percentage_random
rate rate_min rate_iops rate_iops_min rate_process rate_cycle rate_ignore_thinktime
thinktime thinktime_spin thinktime_blocks thinktime_blocks_type thinktime_iotime
latency_target latency_window latency_percentile latency_run max_latency
lat_percentiles clat_percentiles slat_percentiles percentile_list disable_lat disable_clat
disable_slat disable_bw_measurement gtod_reduce significant_figures unified_rw_reporting
kb_base unit_base
zero_buffers refill_buffers scramble_buffers buffer_pattern buffer_compress_percentage
buffer_compress_chunk dedupe_percentage dedupe_mode dedupe_working_set_percentage dedupe_global
verify verify_pattern verify_interval verify_offset verify_fatal verify_async verify_backlog
verify_backlog_batch do_verify verify_only experimental_verify
trim_percentage trim_verify_zero trim_backlog trim_backlog_batch
continue_on_error ignore_error error_dump lockfile
nice prio prioclass cpus_allowed cpus_allowed_policy cpumask numa_cpu_nodes numa_mem_policy
mem iomem clocksource
steadystate steadystate_duration steadystate_ramp_time flow flow_id flow_sleep
serialize_overlap write_hint stats
hipri hipri_percentage fixedbufs registerfiles sqthread_poll sqthread_poll_cpu nonvectored
nowait force_async userspace_reap uncached
""")

ENGINES = _words("""
sync psync vsync pvsync pvsync2 libaio io_uring posixaio mmap splice null
filecreate filestat filedelete dircreate dirstat dirdelete falloc ftruncate
""")

# Refused with the reason, so the message says why rather than only "unknown".
WHY = {
    **dict.fromkeys(("exec_prerun", "exec_postrun"), "runs a program"),
    **dict.fromkeys(("write_iolog", "write_bw_log", "write_lat_log", "write_iops_log",
                     "write_hist_log", "verify_state_save", "per_job_logs"),
                    "writes files the plugin does not own"),
    **dict.fromkeys(("read_iolog", "read_iolog_chunked", "replay_redirect", "merge_blktrace_file",
                     "verify_state_load"), "reads or replays other files or devices"),
    **dict.fromkeys(("ioscheduler", "cgroup", "cgroup_weight", "cgroup_nodelete", "uid", "gid",
                     "lockmem", "gtod_cpu"), "changes the machine or fio's user"),
    **dict.fromkeys(("server", "daemonize", "client", "remote-config", "trigger", "trigger-file",
                     "trigger-remote", "trigger-timeout", "profile"),
                    "is not a job option (it starts servers or runs commands)"),
    **dict.fromkeys(("directory", "opendir", "output", "output_format", "group_reporting"),
                    "is set by the plugin"),
}


# The allowed options whose value fio 3.33 takes as a string (`fio --cmdhelp=NAME`: "type:
# string"), each placed by whether it can name a file (a test checks the list against fio):
PATHS = _words("filename filename_format")  # checked to stay inside the work directory
MEMORY = _words("mem iomem")  # mmap:FILE, mmaphuge:FILE, mmapshared:FILE map a file
PATTERNS = _words("buffer_pattern verify_pattern")  # a 'quoted' part is read from that file
TEXT = _words("""
bssplit clocksource continue_on_error cpus_allowed cpus_allowed_policy dedupe_mode description
exit_what fadvise_hint fallocate file_service_type filesize ignore_error io_submit_mode
ioengine kb_base lockfile
name numa_cpu_nodes numa_mem_policy number_ios random_distribution random_generator randseed
rate_process readwrite rw rw_sequencer steadystate sync trim_backlog unified_rw_reporting
thinktime_blocks_type unit_base verify verify_backlog wait_for write_hint
""")
MEMORY_TYPES = _words("malloc shm shmhuge mmap mmapshared mmaphuge")


def control(text: str) -> str | None:
    """The first control character in text, named (\\n, \\x1b ...), or None."""
    bad = next((c for c in text if ord(c) < 32 or ord(c) == 127), None)
    return None if bad is None else repr(bad)[1:-1]


def refusal(key: str, value: str) -> str | None:
    """Why this option may not be passed to fio, or None when it may."""
    if key in WHY:
        return f"{key} {WHY[key]}"
    if key not in JOB:
        return (f"{key!r} is not a fio job option pytest-fsperf passes on (options are matched "
                "exactly, as fio would take a prefix of another one)")
    bad = control(value)
    if bad:
        return (f"{key}={value!r} holds a control character ({bad}); fio's job files are "
                "line-based, so it could add options")
    if "${" in value:
        return f"{key}={value!r}: fio would put an environment variable there (${{...}})"
    if key == "ioengine" and value not in ENGINES:
        return (f"ioengine={value!r} is not one of the local-file engines pytest-fsperf runs: "
                + ", ".join(sorted(ENGINES)))
    if key in MEMORY and value not in MEMORY_TYPES:
        return (f"{key}={value!r} would map a file the plugin does not own; give only the "
                f"memory type ({', '.join(sorted(MEMORY_TYPES))})")
    if key in PATTERNS and "'" in value:
        return (f"{key}={value!r} would read a file ('NAME' in a pattern); give the pattern "
                "itself (0x..., a number or a \"string\")")
    return None
