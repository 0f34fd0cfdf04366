package io.sumi.conformance;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The handler every listener of every kind calls, and what the scenarios read back: calls, effects
 * (with the key the handler saw), dead letters. A scenario scripts the behaviour of its own payloads
 * ({@link #script}); payloads are unique per scenario run, so scenarios sharing a context never see
 * each other.
 */
public final class Work {

    /** How the handler behaves for one payload. */
    public static final class Script {
        volatile int failBefore;
        volatile int failAfterEffect;
        volatile int nacks;
        volatile boolean reject;
        volatile boolean defer;
        volatile @Nullable CountDownLatch entered;
        volatile @Nullable CountDownLatch release;

        /** Throw, before any effect, on the first {@code n} runs. */
        public Script failBefore(int n) {
            this.failBefore = n;
            return this;
        }

        /** Perform the effect and then throw, on the first {@code n} runs. */
        public Script failAfterEffect(int n) {
            this.failAfterEffect = n;
            return this;
        }

        /** A MANUAL listener nacks (without doing the work) on the first {@code n} runs. */
        public Script nack(int n) {
            this.nacks = n;
            return this;
        }

        /** A MANUAL listener rejects (with requeue) instead of nacking. */
        public Script reject() {
            this.reject = true;
            return this;
        }

        /** A MANUAL listener does the work but keeps the delivery unacknowledged ({@link #deferred}). */
        public Script defer() {
            this.defer = true;
            return this;
        }

        public boolean rejects() {
            return reject;
        }

        public boolean defers() {
            return defer;
        }

        /** The first run waits on a latch until {@link #release()}; later runs do not wait. */
        public Script hold() {
            this.entered = new CountDownLatch(1);
            this.release = new CountDownLatch(1);
            return this;
        }

        public boolean awaitEntered() throws InterruptedException {
            CountDownLatch latch = entered;
            return latch != null && latch.await(60, TimeUnit.SECONDS);
        }

        public void release() {
            CountDownLatch latch = release;
            if (latch != null) {
                latch.countDown();
            }
        }
    }

    /** One effect: the key the handler saw. */
    public record Effect(@Nullable String key) {}

    private static final Script DEFAULT = new Script();

    private final Map<String, Script> scripts = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    private final Map<String, List<Effect>> effects = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> deadLetters = new ConcurrentHashMap<>();
    private final Map<String, List<String>> reasons = new ConcurrentHashMap<>();
    private final Map<String, Runnable> deferredAcks = new ConcurrentHashMap<>();
    private final @Nullable JdbcTemplate jdbc;

    public Work(@Nullable JdbcTemplate jdbc) {
        this.jdbc = jdbc;
        if (jdbc != null) {
            jdbc.execute("CREATE TABLE IF NOT EXISTS catalogue_effects (payload VARCHAR(200) NOT NULL,"
                    + " message_key VARCHAR(300))");
        }
    }

    /** The script of {@code payload}'s runs. */
    public Script script(String payload) {
        return scripts.computeIfAbsent(payload, p -> new Script());
    }

    /**
     * Called by a listener for each message it runs. Returns the run's number (1 for the first).
     * With {@code jdbcEffect} the effect is a row in {@code catalogue_effects}, written with the
     * caller's transaction; otherwise it is kept in memory.
     */
    public int run(String payload, @Nullable String key, boolean jdbcEffect) {
        Script script = scripts.getOrDefault(payload, DEFAULT);
        int call = calls.computeIfAbsent(payload, p -> new AtomicInteger()).incrementAndGet();
        CountDownLatch entered = script.entered;
        CountDownLatch release = script.release;
        if (call == 1 && entered != null && release != null) {
            entered.countDown();
            try {
                if (!release.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("scripted hold of " + payload + " was never released");
                }
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(ex);
            }
        }
        if (call <= script.failBefore) {
            throw new IllegalStateException("scripted failure before the effect, run " + call + " of " + payload);
        }
        if (jdbcEffect) {
            requireJdbc().update("INSERT INTO catalogue_effects (payload, message_key) VALUES (?, ?)", payload, key);
        } else {
            effects.computeIfAbsent(payload, p -> new CopyOnWriteArrayList<>()).add(new Effect(key));
        }
        if (call <= script.failAfterEffect) {
            throw new IllegalStateException("scripted failure after the effect, run " + call + " of " + payload);
        }
        return call;
    }

    /**
     * Called by a MANUAL listener first: whether this run nacks (then it does no work). Counts as a
     * run.
     */
    public boolean nacks(String payload) {
        Script script = scripts.getOrDefault(payload, DEFAULT);
        if (script.nacks == 0) {
            return false;
        }
        int nacked = calls.computeIfAbsent(payload + "#nack", p -> new AtomicInteger())
                .incrementAndGet();
        if (nacked <= script.nacks) {
            calls.computeIfAbsent(payload, p -> new AtomicInteger()).incrementAndGet();
            return true;
        }
        return false;
    }

    /** The script of {@code payload}, or the default one (succeed), without creating one. */
    public Script scriptOf(String payload) {
        return scripts.getOrDefault(payload, DEFAULT);
    }

    /** A delivery a MANUAL listener kept unacknowledged: how to acknowledge it later. */
    public void deferred(String payload, Runnable ack) {
        deferredAcks.put(payload, ack);
    }

    /** The later acknowledgement of a deferred delivery, or {@code null}. */
    public @Nullable Runnable deferredAck(String payload) {
        return deferredAcks.get(payload);
    }

    /** Called by the dead-letter listeners, with what the broker or recoverer said about why. */
    public void deadLettered(String payload, @Nullable String reason) {
        deadLetters.computeIfAbsent(payload, p -> new AtomicInteger()).incrementAndGet();
        reasons.computeIfAbsent(payload, p -> new CopyOnWriteArrayList<>()).add(String.valueOf(reason));
    }

    /** Why each dead letter of {@code payload} was dead-lettered, as far as the broker says. */
    public List<String> deadLetterReasons(String payload) {
        return List.copyOf(reasons.getOrDefault(payload, List.of()));
    }

    public int calls(String payload) {
        AtomicInteger count = calls.get(payload);
        return count == null ? 0 : count.get();
    }

    public List<Effect> effects(String payload) {
        return List.copyOf(effects.getOrDefault(payload, List.of()));
    }

    /** The rows a JDBC effect wrote for {@code payload} (committed ones). */
    public int jdbcEffects(String payload) {
        Integer count = requireJdbc()
                .queryForObject("SELECT COUNT(*) FROM catalogue_effects WHERE payload = ?", Integer.class, payload);
        return count == null ? 0 : count;
    }

    public int deadLetters(String payload) {
        AtomicInteger count = deadLetters.get(payload);
        return count == null ? 0 : count.get();
    }

    private JdbcTemplate requireJdbc() {
        JdbcTemplate template = jdbc;
        if (template == null) {
            throw new IllegalStateException("this Work has no JdbcTemplate");
        }
        return template;
    }
}
