package io.sumi.benchmarks.outbox;

/** One of the two systems under test, seen by the harness. */
// close() throws Exception: a system stops its pools and threads; the harness lets any
// failure, interruption included, end the run.
@SuppressWarnings("try")
interface OutboxSystem extends AutoCloseable {

    String name();

    /** The settings this run uses, for the report. */
    String settings();

    /** Empties the system's table (between phases). */
    void truncate() throws Exception;

    /** Writes {@code rows} committed, undispatched messages of {@code phase} without dispatching them. */
    void loadBacklog(String phase, int rows, int aggregates) throws Exception;

    /** Starts dispatching the backlog (returns at once). */
    void startDrain() throws Exception;

    /** Starts live dispatching (the state for the steady phases). */
    void startLive() throws Exception;

    /** Stops dispatching (the systems share tables and a broker: only the one measured runs). */
    default void pause() throws Exception {}

    /** Messages not yet recorded as dispatched/completed in the system's table. */
    long undispatched() throws Exception;

    /** One business transaction that appends one message. */
    void appendOne(String phase, long seq, String aggregateId);

    @Override
    void close() throws Exception;
}
