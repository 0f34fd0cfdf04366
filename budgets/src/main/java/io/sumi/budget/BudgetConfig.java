package io.sumi.budget;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The settings of one budget. Immutable; build with {@link #custom()}, {@link #of(double, Duration)}
 * or {@link #from(BudgetConfig)}.
 *
 * <p>Spend: every call reserves {@link #costPerCall()} when it is permitted; the caller may replace
 * that with the call's real cost (tokens used, amount charged) through {@link BudgetPermit}. Spend
 * counts for {@link #window()} after the call was permitted. A call is refused when the spend of the
 * window plus {@code costPerCall} would exceed {@link #limit()} (or the spend has reached the limit).
 *
 * <p>Failures: the budget's circuit breaker also opens, as any Resilience4j breaker, when at least
 * {@link #minimumNumberOfCalls()} of the last {@link #slidingWindowSize()} calls were recorded and
 * {@link #failureRateThreshold()} percent of them failed; it stays open for
 * {@link #waitDurationInOpenState()}, then half-opens and lets
 * {@link #permittedCallsInHalfOpenState()} probe calls decide whether it closes again.
 * {@link #recordFailure()} decides which exceptions count as failures (a declined card is an answer,
 * not a failure of the provider).
 */
public final class BudgetConfig {

    /** Default window: one hour. */
    public static final Duration DEFAULT_WINDOW = Duration.ofHours(1);
    /** Default cost of a call: 1 (the limit is then a number of calls). */
    public static final double DEFAULT_COST_PER_CALL = 1;
    /** Default failure rate, in percent, that opens the breaker. */
    public static final float DEFAULT_FAILURE_RATE_THRESHOLD = 50;
    /** Default number of calls the failure rate is computed over. */
    public static final int DEFAULT_SLIDING_WINDOW_SIZE = 20;
    /** Default number of calls needed before the failure rate counts. */
    public static final int DEFAULT_MINIMUM_NUMBER_OF_CALLS = 10;
    /** Default time the breaker stays open after too many failures. */
    public static final Duration DEFAULT_WAIT_DURATION_IN_OPEN_STATE = Duration.ofSeconds(30);
    /** Default number of probe calls in the half-open state. */
    public static final int DEFAULT_PERMITTED_CALLS_IN_HALF_OPEN_STATE = 1;
    /** Default chunk of a fleet budget, as a fraction of the limit: 1 %. */
    public static final double DEFAULT_CHUNK_FRACTION = 0.01;

    private final double limit;
    private final Duration window;
    private final double costPerCall;
    private final float failureRateThreshold;
    private final int slidingWindowSize;
    private final int minimumNumberOfCalls;
    private final Duration waitDurationInOpenState;
    private final int permittedCallsInHalfOpenState;
    private final Predicate<Throwable> recordFailure;
    private final @Nullable BudgetScope scope;
    private final double chunkSize;

    private BudgetConfig(Builder builder) {
        this.limit = builder.limit;
        this.window = builder.window;
        this.costPerCall = builder.costPerCall;
        this.failureRateThreshold = builder.failureRateThreshold;
        this.slidingWindowSize = builder.slidingWindowSize;
        this.minimumNumberOfCalls = builder.minimumNumberOfCalls;
        this.waitDurationInOpenState = builder.waitDurationInOpenState;
        this.permittedCallsInHalfOpenState = builder.permittedCallsInHalfOpenState;
        this.recordFailure = builder.recordFailure;
        this.scope = builder.scope;
        this.chunkSize = builder.chunkSize;
    }

    /** Starts a configuration; {@link Builder#limit(double)} must be set. */
    public static Builder custom() {
        return new Builder();
    }

    /** A budget of {@code limit} per {@code window}, every call costing 1, other settings default. */
    public static BudgetConfig of(double limit, Duration window) {
        return custom().limit(limit).window(window).build();
    }

    /** Starts a configuration from {@code base}. */
    public static Builder from(BudgetConfig base) {
        return new Builder(base);
    }

    /** The spend allowed per window; positive. */
    public double limit() {
        return limit;
    }

    /** How long a call's cost counts; positive. */
    public Duration window() {
        return window;
    }

    /** What a call reserves when it is permitted; at least 0, at most the limit. */
    public double costPerCall() {
        return costPerCall;
    }

    public float failureRateThreshold() {
        return failureRateThreshold;
    }

    public int slidingWindowSize() {
        return slidingWindowSize;
    }

    public int minimumNumberOfCalls() {
        return minimumNumberOfCalls;
    }

    public Duration waitDurationInOpenState() {
        return waitDurationInOpenState;
    }

    public int permittedCallsInHalfOpenState() {
        return permittedCallsInHalfOpenState;
    }

    /** Which exceptions of a call count as failures of the breaker; all by default. */
    public Predicate<Throwable> recordFailure() {
        return recordFailure;
    }

    /**
     * Whose spending the budget caps; empty: {@link BudgetScope#FLEET} if the registry has a
     * {@link SpendStore}, else {@link BudgetScope#INSTANCE}.
     */
    public Optional<BudgetScope> scope() {
        return Optional.ofNullable(scope);
    }

    /**
     * How much spend an instance of a {@link BudgetScope#FLEET fleet} budget reserves in the shared
     * store at a time, then spends locally without a round trip: the set chunk size (at most the
     * limit), else 1 % of the limit, at least {@code cost-per-call}. An instance that dies holds at
     * most this much of its window unspent: the fleet then spends less, never more.
     */
    public double chunkSize() {
        double chunk = Double.isNaN(chunkSize) ? limit * DEFAULT_CHUNK_FRACTION : chunkSize;
        return Math.min(limit, Math.max(chunk, costPerCall));
    }

    @Override
    public String toString() {
        return "BudgetConfig[limit=" + limit + ", window=" + window + ", costPerCall=" + costPerCall
                + ", scope=" + (scope == null ? "default" : scope) + ", chunkSize=" + chunkSize()
                + ", failureRateThreshold="
                + failureRateThreshold + "%, slidingWindowSize=" + slidingWindowSize + ", minimumNumberOfCalls="
                + minimumNumberOfCalls
                + ", waitDurationInOpenState=" + waitDurationInOpenState + ", permittedCallsInHalfOpenState="
                + permittedCallsInHalfOpenState + "]";
    }

    /** Builds a {@link BudgetConfig}; {@link #build()} validates. */
    public static final class Builder {

        private double limit = Double.NaN;
        private Duration window = DEFAULT_WINDOW;
        private double costPerCall = DEFAULT_COST_PER_CALL;
        private float failureRateThreshold = DEFAULT_FAILURE_RATE_THRESHOLD;
        private int slidingWindowSize = DEFAULT_SLIDING_WINDOW_SIZE;
        private int minimumNumberOfCalls = DEFAULT_MINIMUM_NUMBER_OF_CALLS;
        private Duration waitDurationInOpenState = DEFAULT_WAIT_DURATION_IN_OPEN_STATE;
        private int permittedCallsInHalfOpenState = DEFAULT_PERMITTED_CALLS_IN_HALF_OPEN_STATE;
        private Predicate<Throwable> recordFailure = failure -> true;
        private @Nullable BudgetScope scope;
        private double chunkSize = Double.NaN;

        private Builder() {}

        private Builder(BudgetConfig base) {
            this.limit = base.limit;
            this.window = base.window;
            this.costPerCall = base.costPerCall;
            this.failureRateThreshold = base.failureRateThreshold;
            this.slidingWindowSize = base.slidingWindowSize;
            this.minimumNumberOfCalls = base.minimumNumberOfCalls;
            this.waitDurationInOpenState = base.waitDurationInOpenState;
            this.permittedCallsInHalfOpenState = base.permittedCallsInHalfOpenState;
            this.recordFailure = base.recordFailure;
            this.scope = base.scope;
            this.chunkSize = base.chunkSize;
        }

        /** Whose spending the budget caps; {@code null}: fleet if the registry has a store, else instance. */
        public Builder scope(@Nullable BudgetScope scope) {
            this.scope = scope;
            return this;
        }

        /** The chunk of a fleet budget; {@code NaN}: 1 % of the limit (see {@link BudgetConfig#chunkSize()}). */
        public Builder chunkSize(double chunkSize) {
            this.chunkSize = chunkSize;
            return this;
        }

        public Builder limit(double limit) {
            this.limit = limit;
            return this;
        }

        public Builder window(Duration window) {
            this.window = Objects.requireNonNull(window, "window");
            return this;
        }

        public Builder costPerCall(double costPerCall) {
            this.costPerCall = costPerCall;
            return this;
        }

        public Builder failureRateThreshold(float failureRateThreshold) {
            this.failureRateThreshold = failureRateThreshold;
            return this;
        }

        public Builder slidingWindowSize(int slidingWindowSize) {
            this.slidingWindowSize = slidingWindowSize;
            return this;
        }

        public Builder minimumNumberOfCalls(int minimumNumberOfCalls) {
            this.minimumNumberOfCalls = minimumNumberOfCalls;
            return this;
        }

        public Builder waitDurationInOpenState(Duration waitDurationInOpenState) {
            this.waitDurationInOpenState = Objects.requireNonNull(waitDurationInOpenState, "waitDurationInOpenState");
            return this;
        }

        public Builder permittedCallsInHalfOpenState(int permittedCallsInHalfOpenState) {
            this.permittedCallsInHalfOpenState = permittedCallsInHalfOpenState;
            return this;
        }

        public Builder recordFailure(Predicate<Throwable> recordFailure) {
            this.recordFailure = Objects.requireNonNull(recordFailure, "recordFailure");
            return this;
        }

        /**
         * Builds the budget, checking every setting.
         *
         * @throws IllegalArgumentException if the limit is missing or not positive, the window is not
         *     positive, the cost per call is negative or above the limit, or a breaker setting is out of range
         */
        public BudgetConfig build() {
            if (!(limit > 0) || Double.isInfinite(limit)) {
                throw new IllegalArgumentException("A budget needs a positive, finite limit, was " + limit);
            }
            if (window.isNegative() || window.isZero()) {
                throw new IllegalArgumentException("The window of a budget must be positive, was " + window);
            }
            if (!(costPerCall >= 0) || costPerCall > limit) {
                throw new IllegalArgumentException(
                        "The cost per call must be between 0 and the limit (" + limit + "), was " + costPerCall);
            }
            if (!(failureRateThreshold > 0 && failureRateThreshold <= 100)) {
                throw new IllegalArgumentException(
                        "The failure rate threshold is a percentage in (0, 100], was " + failureRateThreshold);
            }
            if (slidingWindowSize < 1 || minimumNumberOfCalls < 1 || permittedCallsInHalfOpenState < 1) {
                throw new IllegalArgumentException(
                        "sliding-window-size, minimum-number-of-calls and permitted-calls-in-half-open-state"
                                + " must be at least 1, were " + slidingWindowSize + ", " + minimumNumberOfCalls + ", "
                                + permittedCallsInHalfOpenState);
            }
            if (waitDurationInOpenState.isNegative() || waitDurationInOpenState.isZero()) {
                throw new IllegalArgumentException(
                        "wait-duration-in-open-state must be positive, was " + waitDurationInOpenState);
            }
            if (!Double.isNaN(chunkSize) && (!(chunkSize > 0) || Double.isInfinite(chunkSize))) {
                throw new IllegalArgumentException("chunk-size must be a positive, finite number, was " + chunkSize);
            }
            if (window.toMillis() < 1) {
                throw new IllegalArgumentException("The window of a budget must be at least 1 ms, was " + window);
            }
            return new BudgetConfig(this);
        }
    }
}
