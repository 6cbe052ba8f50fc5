package keys

import "strings"

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// HashTag returns the part of key that Redis Cluster hashes: the text
// between the first '{' and the first '}' after it when that is not empty,
// else the whole key.
func HashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// Slot returns the Redis Cluster hash slot of key.
func Slot(key string) int { return int(crc16(HashTag(key)) % Slots) }

// crc16 is CRC-16/XMODEM (poly 0x1021, init 0), as used by Redis Cluster.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
