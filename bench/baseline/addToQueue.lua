-- ======================================================================
-- BASELINE FOR THE BENCHMARK ONLY - NOT PART OF THE MATCHMAKING SYSTEM.
-- The original design's `addToQueue.lua`, copied verbatim (everything below the
-- line) from the blog post this project started from
-- (shared/seed/000_a218ebc0463e1ca1.txt, "Redis Lua 스크립트로 안전한 매칭 큐
-- 시스템 구축하기"). Only tools/bench runs it, in its own private
-- redis-server, to compare costs with lua/. Its known defects (O(N) LPOS,
-- string-keyed table replies, EXPIRE on the whole queue) are kept on purpose.
-- ======================================================================
-- addToQueue.lua  
-- 중복 방지와 함께 사용자를 큐에 안전하게 추가

local queueKey = KEYS[1]        -- 큐 키
local userDataKey = KEYS[2]     -- 사용자 데이터 키 (Hash)
local userId = ARGV[1]          -- 사용자 ID
local userData = ARGV[2]        -- 사용자 데이터 (JSON)
local ttlSeconds = tonumber(ARGV[3]) or 3600  -- TTL (기본값: 1시간)

-- 🔍 이미 큐에 있는지 확인 (중복 방지)
local existingPosition = redis.call('LPOS', queueKey, userId)
if existingPosition then
    return {
        success = false,
        message = "이미 큐에 대기 중입니다",
        position = existingPosition + 1,  -- 1부터 시작하는 위치
        queueSize = redis.call('LLEN', queueKey)
    }
end

-- ➕ 큐에 사용자 추가 (FIFO를 위해 LPUSH 사용)
redis.call('LPUSH', queueKey, userId)

-- 💾 사용자 데이터 저장 (매칭 시 필요한 정보)
redis.call('HSET', userDataKey, userId, userData)

-- ⏰ TTL 설정 (메모리 누수 방지)
redis.call('EXPIRE', queueKey, ttlSeconds)
redis.call('EXPIRE', userDataKey, ttlSeconds)

-- 📊 현재 상태 반환
local currentPosition = redis.call('LLEN', queueKey)
local queueSize = currentPosition

return {
    success = true,
    message = "큐에 추가되었습니다",
    position = currentPosition,
    queueSize = queueSize,
    estimatedWaitTime = math.ceil(queueSize / 3) * 30  -- 추정 대기 시간 (초)
}
