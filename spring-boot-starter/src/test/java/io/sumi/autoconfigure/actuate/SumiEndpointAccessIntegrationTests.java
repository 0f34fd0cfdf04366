package io.sumi.autoconfigure.actuate;

import static io.sumi.autoconfigure.actuate.ActuatorTestApplication.get;
import static io.sumi.autoconfigure.actuate.ActuatorTestApplication.post;
import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The endpoint's writes follow Actuator's exposure and access rules: refused over HTTP when the
 * endpoint is not exposed, and when it is exposed with its default (read-only) access. The ledger
 * row a refused write names is left as it was.
 */
class SumiEndpointAccessIntegrationTests {

    static final String RELEASE = "{\"consumer\":\"access-test\",\"messageId\":\"m1\"}";

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        ActuatorTestApplication.database(registry);
    }

    @Nested
    @SpringBootTest(
            classes = ActuatorTestApplication.class,
            webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
            properties = {
                "management.endpoints.web.exposure.include=health",
                "management.endpoint.sumi.access=unrestricted"
            })
    class NotExposed {

        @LocalServerPort
        int port;

        @Autowired
        ProcessedMessageStore store;

        @Test
        void readsAndWritesAreNotFound() throws Exception {
            ClaimResult claim = store.claim("access-test", new ClaimRequest("m1", null), Duration.ofMinutes(5));

            assertThat(get(port, "/actuator/sumi").status()).isEqualTo(404);
            assertThat(post(port, "/actuator/sumi/claims/release", RELEASE).status())
                    .isIn(404, 405);
            assertThat(store.find("access-test", "m1")).get().isEqualTo(claim.message());
            store.release(claim.message(), null);
        }
    }

    @Nested
    @SpringBootTest(
            classes = ActuatorTestApplication.class,
            webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
            properties = "management.endpoints.web.exposure.include=health,sumi")
    class ExposedWithDefaultAccess {

        @LocalServerPort
        int port;

        @Autowired
        ProcessedMessageStore store;

        @Test
        void readsAnswerAndWritesAreRefused() throws Exception {
            ClaimResult claim = store.claim("access-test", new ClaimRequest("m2", null), Duration.ofMinutes(5));

            assertThat(get(port, "/actuator/sumi").status()).isEqualTo(200);
            assertThat(post(
                                    port,
                                    "/actuator/sumi/claims/release",
                                    "{\"consumer\":\"access-test\",\"messageId\":\"m2\"}")
                            .status())
                    .isIn(404, 405);
            assertThat(store.find("access-test", "m2")).get().isEqualTo(claim.message());
            store.release(claim.message(), null);
        }
    }
}
