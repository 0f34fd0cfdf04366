package io.sumi.faults.driver;

import java.util.List;

/** The message broker of a fault run, as a process of its own that the driver can crash and restart. */
interface Broker {

    /** Creates its data, starts it, waits until it answers and creates the run's topic or queues. */
    void initAndStart();

    /** Whether its process runs. */
    boolean alive();

    /** Starts the process again on the same data (without waiting). */
    void start();

    /** {@code kill -9}, wait until the process and its ports are gone, start again and wait until it answers. */
    void crash();

    /** A graceful shutdown, then a start on the same data; waits until it answers. */
    void restart();

    /** Kills the process at the end of the run. */
    void stop();

    /** How often its process was started. */
    int starts();

    /** Where it listens, for the journal. */
    String address();

    /** The application arguments that point an instance at this broker and switch the other broker's client off. */
    List<String> appArguments();

    /**
     * Publishes a copy of an order's message as the outbox would send it again (a confirm or an
     * acknowledgement lost on the way): the same payload, {@code outbox-id} and key or routing key.
     * The duplicates every hop eventually produces, at a known rate, so that a negative control
     * doubles effects whether or not a kill happened to land inside a record's processing. Returns
     * {@code false} when the broker does not answer (the driver tries another one later).
     */
    boolean publishDuplicate(String outboxId, String orderId);
}
