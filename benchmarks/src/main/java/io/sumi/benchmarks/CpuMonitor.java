package io.sumi.benchmarks;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * How much CPU <em>other</em> work took while a case ran, from Linux's /proc: all busy CPU time,
 * less this JVM's and that of the PostgreSQL processes serving this run (its backends, found by
 * the database name in their process titles, and the server's background processes). The
 * machine has 2 cores; a case that ran while others used one of them is not comparable to one
 * that ran alone, so the report shows it. Returns nothing where /proc is missing.
 *
 * <p>{@link #clusterCpuSeconds} instead counts one PostgreSQL cluster whole (the outbox CDC
 * benchmark's private cluster): its postmaster and every process the postmaster started.
 */
public final class CpuMonitor {

    private static final Path PROC = Path.of("/proc");
    private static final double TICKS_PER_SECOND = 100.0; // USER_HZ on Linux

    private final String database;

    CpuMonitor(String database) {
        this.database = database;
    }

    /** A reading: busy ticks of the machine, and ticks of each process that is ours. */
    record Sample(long nanos, long busyTicks, Map<Long, Long> ourTicks) {}

    static boolean available() {
        return Files.isReadable(PROC.resolve("stat"));
    }

    Sample sample() {
        if (!available()) {
            return null;
        }
        try {
            String[] cpu =
                    Files.readAllLines(PROC.resolve("stat")).get(0).trim().split("\\s+", -1);
            long busy = 0;
            for (int i : new int[] {1, 2, 3, 6, 7, 8}) { // user nice system irq softirq steal
                busy += Long.parseLong(cpu[i]);
            }
            Map<Long, Long> ours = new HashMap<>();
            long self = ProcessHandle.current().pid();
            ours.put(self, ticks(PROC.resolve(Long.toString(self))));
            try (DirectoryStream<Path> dirs = Files.newDirectoryStream(
                    PROC, p -> p.getFileName().toString().matches("\\d+"))) {
                for (Path dir : dirs) {
                    try {
                        if (!"postgres"
                                .equals(Files.readString(dir.resolve("comm")).trim())) {
                            continue;
                        }
                        String title = Files.readString(dir.resolve("cmdline")).replace('\0', ' ');
                        if (isOtherDatabaseBackend(title)) {
                            continue;
                        }
                        ours.put(Long.parseLong(dir.getFileName().toString()), ticks(dir));
                    } catch (IOException | RuntimeException ex) {
                        // the process ended meanwhile
                    }
                }
            }
            return new Sample(System.nanoTime(), busy, ours);
        } catch (IOException | RuntimeException ex) {
            return null;
        }
    }

    /** A client backend's title reads "postgres: [cluster: ]user database host(port) state". */
    private boolean isOtherDatabaseBackend(String title) {
        String[] words = title.trim().split("\\s+", -1);
        for (int i = 2; i + 1 < words.length; i++) {
            if (words[i + 1].matches(".+\\(\\d+\\)|\\[local\\]")) {
                return !words[i].equals(database);
            }
        }
        return false; // the postmaster or a background process: shared, counted as ours
    }

    private static long ticks(Path processDir) throws IOException {
        String stat = Files.readString(processDir.resolve("stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ", -1);
        return Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime (fields 14 and 15)
    }

    /** CPU seconds the PostgreSQL processes serving this run used between two samples, or NaN. */
    static double postgresSeconds(Sample start, Sample end) {
        if (start == null || end == null) {
            return Double.NaN;
        }
        long self = ProcessHandle.current().pid();
        long ticks = 0;
        for (Map.Entry<Long, Long> e : end.ourTicks().entrySet()) {
            if (e.getKey() != self) {
                ticks += e.getValue() - start.ourTicks().getOrDefault(e.getKey(), 0L);
            }
        }
        return ticks / TICKS_PER_SECOND;
    }

    /** Cores' worth of CPU used by others between two samples, or NaN. */
    static double otherCores(Sample start, Sample end) {
        if (start == null || end == null) {
            return Double.NaN;
        }
        long ours = 0;
        for (Map.Entry<Long, Long> e : end.ourTicks().entrySet()) {
            ours += e.getValue() - start.ourTicks().getOrDefault(e.getKey(), 0L);
        }
        double seconds = (end.nanos() - start.nanos()) / 1e9;
        return Math.max(0, (end.busyTicks() - start.busyTicks() - ours) / TICKS_PER_SECOND / seconds);
    }

    /**
     * The parent of a process ({@code /proc/<pid>/stat}'s fourth field): for a PostgreSQL backend
     * (from {@code SELECT pg_backend_pid()}) its postmaster. -1 where /proc cannot tell.
     */
    public static long parentPid(long pid) {
        try {
            return Long.parseLong(statFields(PROC.resolve(Long.toString(pid)))[1]);
        } catch (IOException | RuntimeException ex) {
            return -1;
        }
    }

    /**
     * CPU seconds (user + system) one PostgreSQL cluster has used so far: its postmaster, each of
     * its live children (backends, WAL senders, checkpointer, writers, launchers), and the children
     * that have already exited (the postmaster reaps them, so their time is in its cutime and
     * cstime). The difference of two readings is the cluster's CPU time in between, backends that
     * came and went included. NaN where /proc is missing.
     */
    public static double clusterCpuSeconds(long postmasterPid) {
        if (!available()) {
            return Double.NaN;
        }
        try {
            String[] postmaster = statFields(PROC.resolve(Long.toString(postmasterPid)));
            long ticks = Long.parseLong(postmaster[11])
                    + Long.parseLong(postmaster[12])
                    + Long.parseLong(postmaster[13])
                    + Long.parseLong(postmaster[14]);
            String parent = Long.toString(postmasterPid);
            try (DirectoryStream<Path> dirs = Files.newDirectoryStream(
                    PROC, p -> p.getFileName().toString().matches("\\d+"))) {
                for (Path dir : dirs) {
                    try {
                        String[] f = statFields(dir);
                        if (parent.equals(f[1])) {
                            ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]);
                        }
                    } catch (IOException | RuntimeException ex) {
                        // the process ended meanwhile (its time is now in the postmaster's cutime)
                    }
                }
            }
            return ticks / TICKS_PER_SECOND;
        } catch (IOException | RuntimeException ex) {
            return Double.NaN;
        }
    }

    /** The fields of {@code /proc/<pid>/stat} after the command name: [0] state, [1] ppid, ... [11] utime. */
    private static String[] statFields(Path processDir) throws IOException {
        String stat = Files.readString(processDir.resolve("stat"));
        return stat.substring(stat.lastIndexOf(')') + 2).split(" ", -1);
    }
}
