package io.sumi.store.redis;

import io.sumi.budget.SpendStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * The {@link SpendStore} of fleet budgets on Redis or Valkey (standalone, with replicas, or Redis
 * Cluster), so that a fleet whose ledger is on Redis ({@link RedisProcessedMessageStore}) and that
 * has no database shares its budgets there too. Needs {@code io.sumi:sumi-budgets} on the class
 * path (an optional dependency of this module: the ledger alone does not need it).
 *
 * <p>Layout: per budget, a hash <code>&lt;prefix&gt;:&#123;&lt;budget&gt;&#125;:limit</code> (fields
 * {@code l} the fleet's limit, {@code c} the limit last configured, {@code u} when it changed) and a
 * hash <code>&lt;prefix&gt;:&#123;&lt;budget&gt;&#125;:spend</code> (one field per window, its start
 * in epoch milliseconds, valued what the window has spent). Both keys carry the budget as their hash
 * tag (its {@code %} and braces percent-encoded), so on a cluster every operation of a budget is one
 * script on one master, and budgets spread over the masters.
 *
 * <p>Atomicity: each operation is one Lua script, atomic on the server. A reservation reads the
 * window's spend and the limit and adds the amount only if the spend then stays within the limit,
 * in one step, as the JDBC store's conditional {@code UPDATE} does: reservations of every instance
 * together never exceed the limit.
 *
 * <p>Time: the window is named by the Redis server's clock ({@code TIME} inside the script), never
 * the JVM's; on a cluster, the clock of the budget's master. Old windows are forgotten relative to
 * it ({@link #forgetOldWindows}), and the spend hash expires {@link Builder#idleExpiry} after its
 * last reservation or charge (at least two windows), so a budget that is no longer used leaves
 * nothing behind. The limit hash does not expire (one small hash per budget, as the JDBC store's
 * limit row).
 *
 * <p>Failures: what says Redis is out of reach (a refused connection, a timeout, a cluster failing
 * over) is thrown as a {@link org.springframework.dao.TransientDataAccessResourceException}; the
 * budget then refuses calls (fails closed). Durability is Redis's: with {@code appendonly no} a
 * restart forgets what the current window has spent (the fleet may then spend the limit again in
 * that window) and the limits set at run time. {@link Builder#waitForReplicas} makes every write
 * wait for replicas, as the ledger's option does. See {@code docs/redis-ledger.md}.
 *
 * <p>Thread-safe. Create one with {@link #builder(RedisConnectionFactory)}.
 *
 * @since 0.1.0
 */
public final class RedisSpendStore implements SpendStore {

    /** The default key prefix. */
    public static final String DEFAULT_PREFIX = "sumi:budget";

    /** By default, a budget's spend expires 30 days after its last reservation or charge. */
    public static final Duration DEFAULT_IDLE_EXPIRY = Duration.ofDays(30);

    static final String RESERVE = "spend_reserve";
    static final String CHARGE = "spend_charge";
    static final String RELEASE = "spend_release";
    static final String READ = "spend_read";
    static final String READ_CURRENT = "spend_read_current";
    static final String FORGET = "spend_forget";
    static final String REGISTER = "spend_register";
    static final String SET_LIMIT = "spend_set_limit";

    private static final byte[] SERVER_TIME = new byte[0];

    private final RedisScripts scripts;
    private final String prefix;
    private final long idleExpiryMillis;
    /** Names the windows instead of the server's clock; {@code null}: the server's (the default). */
    private final @Nullable Clock windowClock;

    private RedisSpendStore(Builder builder) {
        this.prefix = builder.prefix;
        this.idleExpiryMillis = builder.idleExpiry.toMillis();
        this.windowClock = builder.windowClock;
        this.scripts = new RedisScripts(
                builder.connectionFactory,
                builder.replicas,
                builder.replicaTimeout,
                "budget spend store",
                "spend_common",
                List.of(RESERVE, CHARGE, RELEASE, READ, READ_CURRENT, FORGET, REGISTER, SET_LIMIT));
    }

    /** Starts a builder for a store on {@code connectionFactory} (standalone, sentinel or cluster). */
    public static Builder builder(RedisConnectionFactory connectionFactory) {
        return new Builder(connectionFactory);
    }

    /** A store with the default settings on {@code connectionFactory}. */
    public static RedisSpendStore of(RedisConnectionFactory connectionFactory) {
        return builder(connectionFactory).build();
    }

    /** The key of a budget's spend per window (what {@code redis-cli HGETALL} needs). */
    public String spendKey(String budget) {
        return RedisProcessedMessageStore.hashTagged(prefix, budget) + ":spend";
    }

    /** The key of a budget's limit. */
    public String limitKey(String budget) {
        return RedisProcessedMessageStore.hashTagged(prefix, budget) + ":limit";
    }

    @Override
    public double registerLimit(String budget, double configuredLimit) {
        return decimal(run(REGISTER, budget, number(configuredLimit)).get(0));
    }

    @Override
    public void setLimit(String budget, double limit) {
        run(SET_LIMIT, budget, number(limit));
    }

    @Override
    public Grant tryReserve(String budget, long windowMillis, double amount) {
        long millis = positive(windowMillis);
        List<?> reply = run(
                RESERVE,
                budget,
                number(millis),
                number(amount),
                number(Math.max(idleExpiryMillis, Math.multiplyExact(2, millis))));
        return new Grant(window(reply, 0), integer(reply.get(2)) == 1);
    }

    @Override
    public void charge(String budget, long windowStart, double amount) {
        run(CHARGE, budget, number(windowStart), number(amount), number(idleExpiryMillis));
    }

    @Override
    public void release(String budget, long windowStart, double amount) {
        run(RELEASE, budget, number(windowStart), number(amount));
    }

    @Override
    public WindowState read(String budget, long windowStart) {
        return state(run(READ, budget, number(windowStart)), 0);
    }

    @Override
    public CurrentWindow readCurrent(String budget, long windowMillis) {
        List<?> reply = run(READ_CURRENT, budget, number(positive(windowMillis)));
        return new CurrentWindow(window(reply, 0), state(reply, 2));
    }

    @Override
    public void forgetOldWindows(String budget, long windowMillis, int windowsKept) {
        run(FORGET, budget, number(positive(windowMillis)), number(windowsKept));
    }

    private List<?> run(String script, String budget, byte[]... args) {
        Objects.requireNonNull(budget, "budget");
        List<byte[]> keys = new ArrayList<>(2);
        keys.add(text(limitKey(budget)));
        keys.add(text(spendKey(budget)));
        List<byte[]> arguments = new ArrayList<>(args.length + 1);
        arguments.add(windowClock == null ? SERVER_TIME : number(windowClock.millis()));
        arguments.addAll(List.of(args));
        return (List<?>) scripts.run(script, keys, arguments);
    }

    private static Window window(List<?> reply, int from) {
        return new Window(integer(reply.get(from)), integer(reply.get(from + 1)));
    }

    /** {limit or nil, spent} from {@code from}: an unregistered budget has limit 0, as on the JDBC store. */
    private static WindowState state(List<?> reply, int from) {
        Object limit = reply.get(from);
        if (limit == null) {
            return new WindowState(0, 0);
        }
        return new WindowState(decimal(reply.get(from + 1)), decimal(limit));
    }

    private static long positive(long windowMillis) {
        if (windowMillis <= 0) {
            throw new IllegalArgumentException("A window must be positive, was " + windowMillis + " ms");
        }
        return windowMillis;
    }

    private static long integer(Object value) {
        return value instanceof Number n ? n.longValue() : Long.parseLong(string(value));
    }

    private static double decimal(Object value) {
        return value instanceof Number n ? n.doubleValue() : Double.parseDouble(string(value));
    }

    private static String string(Object value) {
        return value instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : value.toString();
    }

    private static byte[] number(long value) {
        return text(Long.toString(value));
    }

    /** A double as text Lua's {@code tonumber} reads back to the same double. */
    private static byte[] number(double value) {
        if (!Double.isFinite(value)) {
            throw new IllegalArgumentException("A spend or limit must be finite, was " + value);
        }
        return text(Double.toString(value));
    }

    private static byte[] text(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** Builds a {@link RedisSpendStore}. */
    public static final class Builder {

        private final RedisConnectionFactory connectionFactory;
        private String prefix = DEFAULT_PREFIX;
        private Duration idleExpiry = DEFAULT_IDLE_EXPIRY;
        private int replicas;
        private Duration replicaTimeout = Duration.ofSeconds(1);
        private @Nullable Clock windowClock;

        private Builder(RedisConnectionFactory connectionFactory) {
            this.connectionFactory = Objects.requireNonNull(connectionFactory, "connectionFactory");
        }

        /**
         * The prefix of every key ({@link RedisProcessedMessageStore#validatePrefix}: printable ASCII,
         * no spaces, no braces). Default {@value #DEFAULT_PREFIX}.
         */
        public Builder prefix(String prefix) {
            this.prefix = RedisProcessedMessageStore.validatePrefix(prefix);
            return this;
        }

        /**
         * How long a budget's spend is kept after its last reservation or charge (at least two of its
         * windows): a budget no longer used expires. Default 30 days.
         */
        public Builder idleExpiry(Duration idleExpiry) {
            if (idleExpiry.toMillis() <= 0) {
                throw new IllegalArgumentException("idleExpiry must be at least 1 ms, was " + idleExpiry);
            }
            this.idleExpiry = idleExpiry;
            return this;
        }

        /**
         * After every write, {@code WAIT} until {@code replicas} replicas of the budget's master
         * acknowledged it, for at most {@code timeout}; a write fewer acknowledged fails with
         * {@link RedisLedgerReplicationException} (the budget then refuses the call). Default 0: no
         * {@code WAIT}.
         */
        public Builder waitForReplicas(int replicas, Duration timeout) {
            RedisScripts.checkWaitForReplicas(replicas, timeout);
            this.replicas = replicas;
            this.replicaTimeout = timeout;
            return this;
        }

        /**
         * Names the windows by {@code windowClock} instead of the server's clock: for tests that move
         * time by hand, as {@code JdbcSpendStore.Builder#windowClock}. Never in production: the
         * server's clock is the one clock every instance shares.
         */
        public Builder windowClock(Clock windowClock) {
            this.windowClock = Objects.requireNonNull(windowClock, "windowClock");
            return this;
        }

        public RedisSpendStore build() {
            return new RedisSpendStore(this);
        }
    }
}
