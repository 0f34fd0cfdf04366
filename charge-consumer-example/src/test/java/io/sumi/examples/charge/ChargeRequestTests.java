package io.sumi.examples.charge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ChargeRequestTests {

    @Test
    void roundTripsThroughItsFormEncoding() {
        ChargeRequest request = new ChargeRequest("order-7", "cus & co", 1250, "eur");

        assertThat(ChargeRequest.parse(request.toForm())).isEqualTo(request);
    }

    @Test
    void unreadableRequestsAreRejected() {
        assertThatThrownBy(() -> ChargeRequest.parse("order=o&customer=c&currency=eur"))
                .isInstanceOf(InvalidChargeRequestException.class)
                .hasMessageContaining("amount");
        assertThatThrownBy(() -> ChargeRequest.parse("order=o&customer=c&amount=-5&currency=eur"))
                .isInstanceOf(InvalidChargeRequestException.class);
    }
}
