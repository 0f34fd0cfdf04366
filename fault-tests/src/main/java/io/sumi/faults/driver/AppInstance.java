package io.sumi.faults.driver;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** One slot of the application under test; each (re)start is a new JVM, an incarnation. */
final class AppInstance {

    private final int slot;
    private final Path dir;
    private final List<String> baseCommand;
    private Process process;
    private Path log;
    private int incarnation;
    private boolean readySeen;

    AppInstance(int slot, Path dir, List<String> baseCommand) {
        this.slot = slot;
        this.dir = dir;
        this.baseCommand = baseCommand;
    }

    synchronized void start() {
        incarnation++;
        readySeen = false;
        String name = "s" + slot + "i" + incarnation;
        log = dir.resolve("app-" + name + ".log");
        List<String> command = new ArrayList<>(baseCommand);
        command.add("--fault.slot=" + slot);
        command.add("--fault.instance=" + name);
        try {
            process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Writes the live incarnation's thread dump ({@code jcmd <pid> Thread.print}) beside its log;
     * returns the file, or why there is none.
     */
    synchronized String dumpThreads() {
        if (!alive()) {
            return "not alive";
        }
        Path dump = log.resolveSibling(log.getFileName().toString().replace(".log", "-threads.txt"));
        try {
            Process jcmd = new ProcessBuilder(
                            Path.of(System.getProperty("java.home"), "bin", "jcmd")
                                    .toString(),
                            Long.toString(process.pid()),
                            "Thread.print")
                    .redirectErrorStream(true)
                    .redirectOutput(dump.toFile())
                    .start();
            if (!jcmd.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
                jcmd.destroyForcibly();
                return dump + " (jcmd timed out)";
            }
            return dump.toString();
        } catch (IOException ex) {
            return "jcmd failed: " + ex.getMessage();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    synchronized boolean alive() {
        return process != null && process.isAlive();
    }

    /** Whether this incarnation is alive and has finished starting (its listeners and dispatcher run). */
    synchronized boolean ready() {
        try {
            readySeen = readySeen
                    || (Files.exists(log)
                            && Files.readString(log, StandardCharsets.ISO_8859_1)
                                    .contains("FAULT-APP READY"));
            return alive() && readySeen;
        } catch (IOException ex) {
            return false;
        }
    }

    /**
     * CDC mode: whether this incarnation is alive and streams the slot (its log's last word on the
     * slot is that it holds the lock, not that it stopped).
     */
    synchronized boolean streamsCdc() {
        try {
            String text = Files.exists(log) ? Files.readString(log, StandardCharsets.ISO_8859_1) : "";
            return alive() && text.lastIndexOf("starts streaming") > text.lastIndexOf("stopped; trying again");
        } catch (IOException ex) {
            return false;
        }
    }

    /** The last "Caused by" line of this incarnation's log, to say why it did not start. */
    synchronized String lastCause() {
        try {
            return Files.readAllLines(log, StandardCharsets.ISO_8859_1).stream()
                    .filter(line -> line.startsWith("Caused by:"))
                    .reduce((first, second) -> second)
                    .orElse("no cause logged");
        } catch (IOException ex) {
            return "no log: " + ex;
        }
    }

    synchronized void kill9() {
        if (process != null) {
            Processes.kill9(process);
        }
    }

    int slot() {
        return slot;
    }

    synchronized int incarnation() {
        return incarnation;
    }
}
