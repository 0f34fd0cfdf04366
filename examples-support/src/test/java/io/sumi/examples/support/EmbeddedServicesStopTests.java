package io.sumi.examples.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Stopping a demo's services: every one is stopped, and every failure is reported. */
class EmbeddedServicesStopTests {

    private final List<String> stopped = new ArrayList<>();

    @Test
    void aFailureToStopOneServiceDoesNotKeepTheOthersRunningAndEveryFailureIsReported() {
        assertThatThrownBy(() -> EmbeddedServices.stopAll(
                        EmbeddedServices.stopping("smtp", this::fail),
                        EmbeddedServices.stopping("kafka", stopped::add),
                        EmbeddedServices.stopping("postgres", this::fail)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Could not stop String")
                .hasRootCauseMessage("smtp would not stop")
                .satisfies(ex -> assertThat(ex.getSuppressed())
                        .singleElement()
                        .satisfies(
                                suppressed -> assertThat(suppressed.getCause()).hasMessage("postgres would not stop")));
        assertThat(stopped).containsExactly("smtp", "kafka", "postgres");
    }

    @Test
    void servicesThatNeverStartedAreSkipped() throws Exception {
        EmbeddedServices.stopAll(
                EmbeddedServices.stopping(null, this::fail), EmbeddedServices.stopping("kafka", stopped::add));

        assertThat(stopped).containsExactly("kafka");
    }

    private void fail(String service) {
        stopped.add(service);
        throw new IllegalStateException(service + " would not stop");
    }
}
