package io.sumi.faults.driver;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Small helpers to run commands and wait for ports. */
final class Processes {

    private static final boolean ROOT = "root".equals(System.getProperty("user.name"));

    private Processes() {}

    /** Runs a command to completion with its output appended to {@code log}; throws on failure. */
    static void run(List<String> command, Path log, Duration timeout) {
        run(command, log, timeout, Map.of());
    }

    /** {@link #run(List, Path, Duration)} with extra environment variables. */
    static void run(List<String> command, Path log, Duration timeout, Map<String, String> environment) {
        try {
            ProcessBuilder builder = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
            builder.environment().putAll(environment);
            Process process = builder.start();
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException("Timed out after " + timeout + ": " + command + " (see " + log + ")");
            }
            if (process.exitValue() != 0) {
                throw new IllegalStateException("Exit " + process.exitValue() + ": " + command + " (see " + log + ")");
            }
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }

    /** The command run as the postgres user when this JVM runs as root (PostgreSQL refuses root). */
    static List<String> asPostgres(List<String> command) {
        if (!ROOT) {
            return command;
        }
        List<String> wrapped = new ArrayList<>(List.of("runuser", "-u", "postgres", "--"));
        wrapped.addAll(command);
        return wrapped;
    }

    static void chownToPostgres(Path dir) {
        if (ROOT) {
            run(
                    List.of("chown", "-R", "postgres:postgres", dir.toString()),
                    dir.resolveSibling("chown.log"),
                    Duration.ofSeconds(30));
        }
    }

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    static boolean listening(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
            return true;
        } catch (IOException ex) {
            return false;
        }
    }

    static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    static List<String> readClasspath(Path file) {
        try {
            return List.of(Files.readString(file).trim());
        } catch (IOException ex) {
            throw new IllegalStateException(
                    "No classpath file " + file + ": build the module with Maven first"
                            + " (./mvnw -pl fault-tests -am verify writes it)",
                    ex);
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }

    /** Sends SIGKILL and waits until the process is gone. */
    static void kill9(Process process) {
        process.destroyForcibly();
        try {
            process.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
